//! Locks on ZooKeeper (under construction).
