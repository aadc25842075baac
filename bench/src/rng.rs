//! The seeded random numbers of a run: the order of the two sides of each
//! pair, the order of each round of the descriptive groups, and the
//! bootstrap's resamples. One ChaCha8 stream per use, each from a fixed
//! seed, so the same measurements always give the same orders and the
//! same intervals.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// A seeded stream of random numbers.
pub struct Seeded(ChaCha8Rng);

impl Seeded {
    /// The stream of `seed` (each use of the run has its own).
    pub fn new(seed: u64) -> Seeded {
        Seeded(ChaCha8Rng::seed_from_u64(seed ^ 0x6265_6e63_685f_7061))
    }

    /// A number in `0..n` (0 when `n` is 0), without modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let n = n as u64;
        // Reject the top partial block so every residue is equally likely.
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.0.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.0.next_u64() & 1 == 1
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `0..len` in a random order (Fisher–Yates).
    pub fn permutation(&mut self, len: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..len).collect();
        for i in (1..len).rev() {
            order.swap(i, self.below(i + 1));
        }
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_orders_and_another_seed_others() {
        let orders = |seed| {
            let mut rng = Seeded::new(seed);
            (0..20).map(|_| rng.permutation(6)).collect::<Vec<_>>()
        };
        assert_eq!(orders(7), orders(7));
        assert_ne!(orders(7), orders(8));
    }

    #[test]
    fn a_permutation_holds_every_index_once() {
        let mut rng = Seeded::new(1);
        for len in 0..10 {
            let mut p = rng.permutation(len);
            p.sort_unstable();
            assert_eq!(p, (0..len).collect::<Vec<_>>());
        }
    }

    #[test]
    fn draws_below_n_are_all_reached_and_roughly_even() {
        let mut rng = Seeded::new(3);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[rng.below(3)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
        let heads = (0..10_000).filter(|_| rng.coin()).count();
        assert!((4_500..5_500).contains(&heads), "{heads}");
        assert!(
            (0..1000)
                .map(|_| rng.unit())
                .all(|u| (0.0..1.0).contains(&u))
        );
    }
}
