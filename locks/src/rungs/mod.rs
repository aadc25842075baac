//! One module per rung, in ladder order, plus the commands they share.

pub mod common;
pub mod fenced;
pub mod get_check_del;
pub mod lua_release;
pub mod masters;
pub mod no_lock;
pub mod redlock;
pub mod reentrant;
pub mod set_nx_px;
pub mod set_timestamp;
pub mod setnx;
pub mod setnx_expire;
pub mod watchdog;
