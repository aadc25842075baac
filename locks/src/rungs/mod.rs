//! One module per rung, in ladder order.

pub mod common;
pub mod lua_release;
