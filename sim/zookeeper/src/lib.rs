//! A simulated ZooKeeper server (under construction).
