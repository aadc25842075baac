//! Lease tokens and jitter from one injectable, seedable random source.
//!
//! The simulator seeds it so a run replays byte for byte; benchmarks and
//! real use seed it from the OS-independent mix of a caller-given value
//! (the caller decides where entropy comes from).

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::sync::Mutex;
use std::time::Duration;

/// A seeded random source for tokens and retry jitter.
#[derive(Debug)]
pub struct TokenSource {
    rng: Mutex<ChaCha8Rng>,
}

impl TokenSource {
    /// A source that yields the same sequence for the same seed.
    pub fn seeded(seed: u64) -> Self {
        TokenSource {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
        }
    }

    /// A fresh 128-bit token, as 32 lowercase hex digits.
    pub fn token(&self) -> String {
        let (a, b) = {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            (rng.next_u64(), rng.next_u64())
        };
        // Written digit by digit rather than through `format!`: a token is
        // drawn on every acquire, and the formatting machinery cost more
        // than the draw (the benchmark measures the ladder's client path).
        let mut token = String::with_capacity(32);
        for word in [a, b] {
            for shift in (0..16).rev() {
                let digit = ((word >> (shift * 4)) & 0xf) as u32;
                token.push(char::from_digit(digit, 16).unwrap_or('0'));
            }
        }
        token
    }

    /// A random duration in `[0, max]`, for jittered backoff.
    pub fn jitter(&self, max: Duration) -> Duration {
        let max_us = max.as_micros() as u64;
        if max_us == 0 {
            return Duration::ZERO;
        }
        let r = self
            .rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_u64();
        Duration::from_micros(r % (max_us + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_tokens_and_tokens_differ() {
        let a = TokenSource::seeded(7);
        let b = TokenSource::seeded(7);
        let (a1, a2) = (a.token(), a.token());
        assert_eq!(a1, b.token());
        assert_ne!(a1, a2);
        assert_eq!(a1.len(), 32);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let (x, y) = (rng.next_u64(), rng.next_u64());
        assert_eq!(
            a1,
            format!("{x:016x}{y:016x}"),
            "zero-padded lowercase hex of two draws"
        );
    }
}
