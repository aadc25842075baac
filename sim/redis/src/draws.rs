//! The node's own random draws for the commands that pick at random
//! (`SPOP`, `SRANDMEMBER`, `ZRANDMEMBER`, `RANDOMKEY`, `HRANDFIELD`).
//!
//! Redis draws from its process-wide generator; a simulation must replay a
//! seed byte for byte, so the node draws from a small generator of its own
//! (SplitMix64), seeded from the node's name: two runs of one scenario pick
//! the same members, two nodes of one run pick differently.

/// A deterministic generator (SplitMix64).
#[derive(Debug, Clone, Default)]
pub struct Draws {
    state: u64,
}

impl Draws {
    /// A generator seeded from `name` (FNV-1a of its bytes), so a node's
    /// draws depend on its name alone.
    pub fn seeded(name: &str) -> Draws {
        let state = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Draws { state }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0); the slight modulo bias does not matter
    /// for picking members.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `count` distinct indexes of `0..n` (`count` ≤ `n`), in the order
    /// drawn (a partial Fisher-Yates shuffle).
    pub fn distinct(&mut self, n: usize, count: usize) -> Vec<usize> {
        let mut pool: Vec<usize> = (0..n).collect();
        for i in 0..count {
            let j = i + self.below(n - i);
            pool.swap(i, j);
        }
        pool.truncate(count);
        pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_gives_the_same_draws_every_time() {
        let (mut a, mut b) = (Draws::seeded("n1"), Draws::seeded("n1"));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(
            Draws::seeded("n2").next_u64(),
            Draws::seeded("n1").next_u64()
        );
    }

    #[test]
    fn distinct_indexes_are_distinct_and_in_range() {
        let mut d = Draws::seeded("x");
        let mut picked = d.distinct(10, 10);
        picked.sort_unstable();
        assert_eq!(picked, (0..10).collect::<Vec<_>>());
        assert!(d.below(3) < 3);
    }
}
