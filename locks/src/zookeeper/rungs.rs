//! The ZooKeeper rungs (to come).
