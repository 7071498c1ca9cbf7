//! The draw of the pre-queue: the visitors who came before the on-sale time keep the turns
//! they were given on arrival as a set, and the set is dealt out among them at random, each
//! order equally likely. Nobody gains by arriving first, or by arriving many times.

use rand::Rng;
use rand::seq::SliceRandom;

/// Deals `turns` out at random: afterwards `turns[i]` is the turn of the i-th visitor. A
/// Fisher–Yates shuffle with `rng`, which must be a cryptographic generator in production
/// (a visitor must not be able to predict the draw).
pub fn deal<R: Rng + ?Sized>(turns: &mut [i64], rng: &mut R) {
    turns.shuffle(rng);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::collections::HashMap;

    /// Chi-squared over every order of five turns: 120 orders, 120,000 draws, 1,000 expected
    /// of each. With 119 degrees of freedom the statistic stays under 173.0 with probability
    /// 0.999 for a uniform draw; the seeds are fixed so the test gives the same answer each run.
    #[test]
    fn every_order_is_equally_likely() {
        for seed in [1_u64, 2, 3] {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut seen: HashMap<[i64; 5], u32> = HashMap::new();
            let draws = 120_000;
            for _ in 0..draws {
                let mut turns = [1, 2, 3, 4, 5];
                deal(&mut turns, &mut rng);
                *seen.entry(turns).or_default() += 1;
            }
            assert_eq!(seen.len(), 120, "every order comes up");
            let expected = f64::from(draws) / 120.0;
            let chi2: f64 = seen
                .values()
                .map(|&n| (f64::from(n) - expected).powi(2) / expected)
                .sum();
            assert!(chi2 < 173.0, "seed {seed}: chi-squared {chi2:.1}");
        }
    }

    /// Each visitor's chance of each turn is the same: first, last or in between.
    #[test]
    fn no_turn_favours_an_early_arrival() {
        let mut rng = StdRng::seed_from_u64(7);
        let n = 10;
        let draws = 100_000;
        let mut first = vec![0_u32; n];
        for _ in 0..draws {
            let mut turns: Vec<i64> = (1..=n as i64).collect();
            deal(&mut turns, &mut rng);
            for (visitor, turn) in turns.iter().enumerate() {
                if *turn == 1 {
                    first[visitor] += 1;
                }
            }
        }
        let expected = f64::from(draws) / n as f64;
        let chi2: f64 = first
            .iter()
            .map(|&k| (f64::from(k) - expected).powi(2) / expected)
            .sum();
        // 9 degrees of freedom: under 27.9 with probability 0.999.
        assert!(chi2 < 27.9, "chi-squared {chi2:.1} over {first:?}");
    }

    #[test]
    fn the_turns_are_kept_as_a_set() {
        let mut rng = StdRng::seed_from_u64(9);
        let mut turns = vec![4, 9, 17, 30];
        deal(&mut turns, &mut rng);
        turns.sort_unstable();
        assert_eq!(turns, vec![4, 9, 17, 30]);
    }
}
