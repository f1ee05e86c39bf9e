//! Delta debugging: the minimising algorithm `ddmin` of Zeller and Hildebrandt, "Simplifying
//! and Isolating Failure-Inducing Input" (IEEE TSE 28(2), 2002), over a sequence of steps.
//!
//! Given a sequence that fails (here: replaying these steps from a fresh launch ends in the
//! crash being minimised), ddmin splits it into `n` parts and tests each part, then each
//! complement (the sequence without one part); a failing part or complement becomes the new
//! sequence, else the parts are made smaller (`n` doubled) until they are single steps. The
//! result is *1-minimal*: removing any one of its steps no longer fails.
//!
//! Two refinements of the paper's algorithm, both sound for sequences replayed in order:
//!
//! - a test says which of its steps it carried out before the failure came (it may come
//!   before the end, and a step with nothing to act on is passed over): those steps alone
//!   do exactly what the test did, so they become the sequence at once;
//! - outcomes are cached by the steps tested, so a part that is also a complement (at `n = 2`)
//!   or a sequence met again later costs no second replay.
//!
//! Tests that cannot be carried out (a step's widget is not on the screen) are the paper's
//! *unresolved* outcome and count, as in the paper, as not failing.

use std::collections::HashMap;

/// The outcome of one test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trial {
    /// The failure was reproduced, after the steps at these positions of the tested sequence
    /// were carried out (in order; none when it came at the launch).
    Fails { taken: Vec<usize> },
    /// The sequence ran to its end without the failure.
    Passes,
    /// The sequence could not be carried out (a step had nothing to act on).
    Unresolved,
}

/// Why a minimisation stopped before the result was shown 1-minimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// The replays or the time allowed are spent.
    Budget,
    /// The user asked to stop.
    Interrupted,
}

impl Halt {
    pub fn as_str(self) -> &'static str {
        match self {
            Halt::Budget => "budget",
            Halt::Interrupted => "interrupted",
        }
    }
}

/// What ddmin found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minimal {
    /// The smallest failing sequence found (a subsequence of the input, in order).
    pub items: Vec<usize>,
    /// Every single step was shown necessary: removing any one no longer fails.
    pub one_minimal: bool,
    /// Why it stopped early, if it did.
    pub halted: Option<Halt>,
    /// Tests carried out (cached outcomes not counted).
    pub tests: usize,
}

/// Minimises `items`, a sequence known to fail, with `test` (which returns `Err` when no more
/// test may be made: the budget is spent or the user stopped).
pub fn ddmin(items: Vec<usize>, test: &mut dyn FnMut(&[usize]) -> Result<Trial, Halt>) -> Minimal {
    let mut search = Search {
        test,
        cache: HashMap::new(),
        tests: 0,
    };
    let mut current = items;
    let mut n = 2usize;
    let halt = |current: Vec<usize>, halt: Halt, tests: usize| Minimal {
        items: current,
        one_minimal: false,
        halted: Some(halt),
        tests,
    };
    loop {
        if current.is_empty() {
            break;
        }
        if current.len() == 1 {
            // The one removal left: nothing at all (the app failing at its launch).
            match search.fails(&[]) {
                Ok(Some(_)) => current.clear(),
                Ok(None) => {}
                Err(h) => return halt(current, h, search.tests),
            }
            break;
        }
        n = n.min(current.len());
        let parts = split(&current, n);
        // Reduce to a part.
        match search.first_failing(parts.iter().cloned()) {
            Ok(Some(found)) => {
                current = found;
                n = 2;
                continue;
            }
            Ok(None) => {}
            Err(h) => return halt(current, h, search.tests),
        }
        // Reduce to a complement (at n = 2 the complements are the parts again).
        if n > 2 {
            let complements = (0..parts.len()).map(|i| complement(&parts, i));
            match search.first_failing(complements) {
                Ok(Some(found)) => {
                    current = found;
                    n = (n - 1).max(2);
                    continue;
                }
                Ok(None) => {}
                Err(h) => return halt(current, h, search.tests),
            }
        }
        // Increase granularity, or stop: every single step was removed once.
        if n >= current.len() {
            break;
        }
        n = (2 * n).min(current.len());
    }
    Minimal {
        items: current,
        one_minimal: true,
        halted: None,
        tests: search.tests,
    }
}

struct Search<'t> {
    test: &'t mut dyn FnMut(&[usize]) -> Result<Trial, Halt>,
    cache: HashMap<Vec<usize>, Trial>,
    tests: usize,
}

impl Search<'_> {
    /// The failing prefix of `candidate`, when it fails.
    fn fails(&mut self, candidate: &[usize]) -> Result<Option<Vec<usize>>, Halt> {
        let trial = match self.cache.get(candidate) {
            Some(trial) => trial.clone(),
            None => {
                let trial = (self.test)(candidate)?;
                self.tests += 1;
                self.cache.insert(candidate.to_vec(), trial.clone());
                trial
            }
        };
        Ok(match trial {
            Trial::Fails { taken } => Some(
                taken
                    .iter()
                    .filter_map(|&at| candidate.get(at).copied())
                    .collect(),
            ),
            Trial::Passes | Trial::Unresolved => None,
        })
    }

    fn first_failing(
        &mut self,
        candidates: impl Iterator<Item = Vec<usize>>,
    ) -> Result<Option<Vec<usize>>, Halt> {
        for candidate in candidates {
            if let Some(found) = self.fails(&candidate)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

/// `items` in `n` parts of nearly equal length, in order.
fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.clamp(1, items.len().max(1));
    let mut parts = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (items.len() - start) / (n - i);
        parts.push(items[start..end].to_vec());
        start = end;
    }
    parts
}

/// Every part but part `i`, in order.
fn complement(parts: &[Vec<usize>], i: usize) -> Vec<usize> {
    parts
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .flat_map(|(_, part)| part.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test that fails once every step of `needed` has been taken, in order: the failure
    /// comes right after the last of them.
    fn needs(needed: &[usize]) -> impl FnMut(&[usize]) -> Result<Trial, Halt> + '_ {
        move |candidate: &[usize]| {
            let mut wanted = needed.iter().peekable();
            for (at, step) in candidate.iter().enumerate() {
                if wanted.peek() == Some(&step) {
                    wanted.next();
                    if wanted.peek().is_none() {
                        return Ok(Trial::Fails {
                            taken: (0..=at).collect(),
                        });
                    }
                }
            }
            Ok(match needed.is_empty() {
                true => Trial::Fails { taken: Vec::new() },
                false => Trial::Passes,
            })
        }
    }

    #[test]
    fn parts_are_nearly_equal_and_in_order() {
        assert_eq!(split(&[0, 1, 2, 3, 4], 2), vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(split(&[0, 1, 2], 3), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(complement(&[vec![0], vec![1, 2], vec![3]], 1), vec![0, 3]);
    }

    #[test]
    fn the_steps_a_failure_needs_are_found_among_many() {
        let needed = [3, 4, 17, 30, 46];
        let mut test = needs(&needed);
        let found = ddmin((0..47).collect(), &mut test);
        assert_eq!(found.items, needed);
        assert!(found.one_minimal);
        assert_eq!(found.halted, None);
        assert!(found.tests > 0 && found.tests < 47 * 47, "{}", found.tests);
    }

    #[test]
    fn the_result_is_one_minimal() {
        // The failure needs step 7 after step 2 or step 4: either will do, not both.
        let mut test = |candidate: &[usize]| -> Result<Trial, Halt> {
            let at = |s| candidate.iter().position(|&c| c == s);
            Ok(match at(7) {
                Some(seven) if [2, 4].iter().any(|&s| at(s).is_some_and(|b| b < seven)) => {
                    Trial::Fails {
                        taken: (0..=seven).collect(),
                    }
                }
                _ => Trial::Passes,
            })
        };
        let found = ddmin((0..10).collect(), &mut test);
        assert_eq!(found.items.len(), 2, "{:?}", found.items);
        assert_eq!(found.items[1], 7);
        for i in 0..found.items.len() {
            let mut without = found.items.clone();
            without.remove(i);
            assert_eq!(test(&without), Ok(Trial::Passes));
        }
    }

    #[test]
    fn unresolved_tests_count_as_not_failing() {
        // Any sequence that skips step 0 cannot be carried out.
        let mut inner = needs(&[0, 6]);
        let mut test = |candidate: &[usize]| match candidate.first() {
            Some(0) => inner(candidate),
            _ => Ok(Trial::Unresolved),
        };
        let found = ddmin((0..9).collect(), &mut test);
        assert_eq!(found.items, vec![0, 6]);
        assert!(found.one_minimal);
    }

    #[test]
    fn steps_passed_over_are_left_out_at_once() {
        // Steps 10 to 19 have nothing to act on unless step 9 came first; the failure needs
        // step 3 then step 25. A test reports the steps it carried out.
        let mut asked = 0;
        let mut test = |candidate: &[usize]| -> Result<Trial, Halt> {
            asked += 1;
            let mut taken = Vec::new();
            let mut nine = false;
            let mut three = false;
            for (at, &step) in candidate.iter().enumerate() {
                if (10..20).contains(&step) && !nine {
                    continue;
                }
                nine |= step == 9;
                three |= step == 3;
                taken.push(at);
                if step == 25 && three {
                    return Ok(Trial::Fails { taken });
                }
            }
            Ok(Trial::Passes)
        };
        let found = ddmin((0..30).collect(), &mut test);
        assert_eq!(found.items, vec![3, 25]);
        assert!(found.one_minimal);
        assert_eq!(found.tests, asked);
    }

    #[test]
    fn a_failure_at_launch_needs_no_step() {
        let mut test = needs(&[]);
        let found = ddmin((0..5).collect(), &mut test);
        assert_eq!(found.items, Vec::<usize>::new());
        assert!(found.one_minimal);
    }

    #[test]
    fn a_spent_budget_keeps_the_smallest_failing_sequence_so_far() {
        let needed = [10, 20];
        let mut inner = needs(&needed);
        let mut spent = 0;
        let mut test = |candidate: &[usize]| {
            spent += 1;
            // Halves, then quarters, pass; the seventh test (all but the first quarter) fails
            // and is the sequence kept when the eighth is refused.
            match spent > 7 {
                true => Err(Halt::Budget),
                false => inner(candidate),
            }
        };
        let found = ddmin((0..40).collect(), &mut test);
        assert_eq!(found.halted, Some(Halt::Budget));
        assert!(!found.one_minimal);
        assert_eq!(found.tests, 7);
        assert_eq!(found.items, (10..=20).collect::<Vec<_>>());
        // Whatever it holds still fails.
        assert!(matches!(
            needs(&needed)(&found.items),
            Ok(Trial::Fails { .. })
        ));
        assert!(found.items.len() < 40);
    }

    #[test]
    fn outcomes_are_not_asked_twice() {
        let mut asked: Vec<Vec<usize>> = Vec::new();
        let mut inner = needs(&[1, 7]);
        let mut test = |candidate: &[usize]| {
            asked.push(candidate.to_vec());
            inner(candidate)
        };
        let found = ddmin((0..12).collect(), &mut test);
        assert_eq!(found.items, vec![1, 7]);
        let mut unique = asked.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), asked.len(), "{asked:?}");
        assert_eq!(found.tests, asked.len());
    }
}
