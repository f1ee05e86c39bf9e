//! The screen graph laid out for a picture (the PDF's and the HTML's): screens in columns by
//! their distance from the run's first screen over its transitions, in the order the run first
//! saw them within a column.

use std::collections::{HashMap, VecDeque};

use super::Report;

/// Where a screen goes, in cells: column `col`, row `row`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub screen_id: i64,
    pub col: usize,
    pub row: usize,
}

/// The layout: every screen of the report placed, and the grid's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub placed: Vec<Placed>,
    pub cols: usize,
    pub rows: usize,
}

impl Layout {
    pub fn of(report: &Report) -> Layout {
        let mut next: HashMap<i64, Vec<i64>> = HashMap::new();
        for t in &report.transitions {
            if t.from != t.to {
                next.entry(t.from).or_default().push(t.to);
            }
        }
        // Screens come in first-seen order; each one no earlier screen reached starts anew at
        // column 0 (a relaunch, a jump the run did not record as a transition).
        let mut depth: HashMap<i64, usize> = HashMap::new();
        for root in &report.screens {
            if depth.contains_key(&root.id) {
                continue;
            }
            depth.insert(root.id, 0);
            let mut queue = VecDeque::from([root.id]);
            while let Some(at) = queue.pop_front() {
                let d = depth[&at];
                for &to in next.get(&at).into_iter().flatten() {
                    if let std::collections::hash_map::Entry::Vacant(slot) = depth.entry(to) {
                        slot.insert(d + 1);
                        queue.push_back(to);
                    }
                }
            }
        }
        let mut rows_in: HashMap<usize, usize> = HashMap::new();
        let placed: Vec<Placed> = report
            .screens
            .iter()
            .map(|s| {
                let col = depth.get(&s.id).copied().unwrap_or(0);
                let row = rows_in.entry(col).or_insert(0);
                *row += 1;
                Placed {
                    screen_id: s.id,
                    col,
                    row: *row - 1,
                }
            })
            .collect();
        Layout {
            cols: placed.iter().map(|p| p.col + 1).max().unwrap_or(0),
            rows: placed.iter().map(|p| p.row + 1).max().unwrap_or(0),
            placed,
        }
    }

    pub fn get(&self, screen_id: i64) -> Option<Placed> {
        self.placed
            .iter()
            .copied()
            .find(|p| p.screen_id == screen_id)
    }
}
