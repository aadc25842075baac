//! `math.random` and `math.randomseed` as Redis 7.0 replaces them in its
//! Lua: not the C library's `rand()`, but Redis's own `rand48`
//! generator (`redisLrand48`), one per server process, starting from
//! the generator's standard state and never reseeded by Redis itself, so
//! every script of a process draws from one sequence, and
//! `math.randomseed(42)` followed by `math.random(1000)` answers 745 on
//! any Redis 7.0. Being a node's own state, it is also deterministic in
//! the simulator, where the C library's generator is shared by every
//! node a process runs.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value};

use super::{arg_error, caller_error, type_error};

/// The 48-bit linear congruential generator of POSIX `drand48`.
#[derive(Debug)]
struct Rand48 {
    x: Cell<u64>,
}

/// The multiplier and the increment of `drand48`.
const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const INCREMENT: u64 = 0xB;
/// The state before any seed: `drand48`'s `X0`, `X1`, `X2`.
const INITIAL_STATE: u64 = 0x1234_ABCD_330E;
/// The low 16 bits of the state after a seed.
const SEED_LOW: u64 = 0x330E;
/// Redis divides the 31-bit draw by `INT32_MAX`, after a `%` by it.
const LRAND48_MAX: i64 = i32::MAX as i64;

impl Rand48 {
    fn seed(&self, seed: i32) {
        self.x.set((u64::from(seed as u32) << 16) | SEED_LOW);
    }

    /// The next 31-bit draw (`lrand48`).
    fn next(&self) -> i64 {
        let x = MULTIPLIER
            .wrapping_mul(self.x.get())
            .wrapping_add(INCREMENT)
            & ((1 << 48) - 1);
        self.x.set(x);
        (x >> 17) as i64
    }

    /// A number in [0, 1), as `redis_math_random` makes it.
    fn unit(&self) -> f64 {
        (self.next() % LRAND48_MAX) as f64 / LRAND48_MAX as f64
    }
}

/// `luaL_checkint`: argument `n` (from 1) as a C `int`, from a number
/// (truncated) or a string that reads as one.
fn check_int(lua: &Lua, args: &[Value], n: usize) -> mlua::Result<i32> {
    // Lua's own conversion: a number, or a string that reads as one.
    let number = match args.get(n - 1) {
        Some(v @ (Value::Integer(_) | Value::Number(_) | Value::String(_))) => {
            lua.coerce_number(v.clone())?
        }
        _ => None,
    };
    match number {
        Some(x) => Ok(x as i64 as i32),
        None => Err(type_error(lua, args, n, "number")),
    }
}

/// Replaces `math.random` and `math.randomseed` in `math` with Redis's,
/// drawing from a generator of their own.
pub(crate) fn install(lua: &Lua, math: &Table) -> mlua::Result<()> {
    let generator = Rc::new(Rand48 {
        x: Cell::new(INITIAL_STATE),
    });
    let g = generator.clone();
    let random = lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        let r = g.unit();
        match args.len() {
            0 => Ok(r),
            1 => {
                let upper = check_int(lua, &args, 1)?;
                if upper < 1 {
                    return Err(arg_error(lua, 1, "interval is empty"));
                }
                Ok((r * f64::from(upper)).floor() + 1.0)
            }
            2 => {
                let lower = check_int(lua, &args, 1)?;
                let upper = check_int(lua, &args, 2)?;
                if lower > upper {
                    return Err(arg_error(lua, 2, "interval is empty"));
                }
                let span = f64::from(upper) - f64::from(lower) + 1.0;
                Ok((r * span).floor() + f64::from(lower))
            }
            _ => Err(caller_error(lua, "wrong number of arguments")),
        }
    })?;
    let randomseed = lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        generator.seed(check_int(lua, &args, 1)?);
        Ok(())
    })?;
    math.raw_set("random", random)?;
    math.raw_set("randomseed", randomseed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_with_42_the_first_draw_of_1000_is_745_as_on_redis() {
        let g = Rand48 {
            x: Cell::new(INITIAL_STATE),
        };
        g.seed(42);
        assert_eq!((g.unit() * 1000.0).floor() + 1.0, 745.0);
    }

    #[test]
    fn a_fresh_generator_starts_from_drand48s_own_state() {
        let g = Rand48 {
            x: Cell::new(INITIAL_STATE),
        };
        assert!((g.unit() - 0.396_464_773_638_390_4).abs() < 1e-15);
    }
}
