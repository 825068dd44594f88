//! A paged query answer (query.lua, "Paged answers"): the pages of a
//! query's calls gathered, each member once, in the query's order, cut to
//! its page; or, for a count, the pages' numbers added (no member kept, so
//! a count's memory does not grow with its answer).

use crate::plan::query::{self, Answer, Spec};
use crate::schema::entity::EntityDesc;
use crate::script::reply::QueryPage;
use std::collections::HashSet;

/// The pages gathered so far.
pub(crate) struct Pages {
    /// An ordered query: each match comes with its order score.
    scored: bool,
    /// A count: the pages bring only their numbers, added in `counted`.
    count_only: bool,
    counted: u64,
    /// The members gathered: a cursor may return one twice (SSCAN does when
    /// a set is resized between pages).
    seen: HashSet<String>,
    rows: Vec<(String, f64)>,
    ghosts: Vec<String>,
}

impl Pages {
    /// Pages of a query ordered by a sorted index (`scored`) or not, or of
    /// a count.
    pub(crate) fn new(scored: bool, count_only: bool) -> Self {
        Pages {
            scored,
            count_only,
            counted: 0,
            seen: HashSet::new(),
            rows: Vec::new(),
            ghosts: Vec::new(),
        }
    }

    /// Adds one page; returns the cursor of the next (empty: none).
    pub(crate) fn add(&mut self, page: QueryPage) -> String {
        let room = query::GHOST_BUDGET.saturating_sub(self.ghosts.len());
        self.ghosts.extend(page.ghosts.into_iter().take(room));
        if self.count_only {
            self.counted += page.counted;
            return page.cursor;
        }
        let mut it = page.matches.into_iter();
        while let Some(member) = it.next() {
            let score = if self.scored {
                it.next()
                    .and_then(|s| query::parse_score(&s))
                    .unwrap_or(f64::NAN)
            } else {
                f64::NAN
            };
            if self.seen.insert(member.clone()) {
                self.rows.push((member, score));
            }
        }
        page.cursor
    }

    /// The answer to `spec`: every match counted, the page cut from them in
    /// the query's order; scores kept when `with_scores`.
    pub(crate) fn answer(
        self,
        desc: &'static EntityDesc,
        spec: &Spec,
        with_scores: bool,
    ) -> Answer {
        let total = if self.count_only {
            self.counted
        } else {
            self.rows.len() as u64
        };
        let mut answer = query::answer_of_rows(desc, spec, with_scores, total, self.rows);
        answer.ghosts = self.ghosts;
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::fixtures::USER;

    fn page(matches: &[&str], cursor: &str) -> QueryPage {
        QueryPage {
            matches: matches.iter().map(|m| m.to_string()).collect(),
            ghosts: vec![],
            counted: matches.len() as u64,
            cursor: cursor.into(),
        }
    }

    #[test]
    fn pages_give_each_member_once_sorted_and_cut() {
        let mut pages = Pages::new(false, false);
        assert_eq!(pages.add(page(&["10", "2", "7"], "d:1:1:5")), "d:1:1:5");
        assert_eq!(pages.add(page(&["7", "1"], "")), "");
        let spec = Spec {
            page: Some((1, 2)),
            ..Spec::default()
        };
        let answer = pages.answer(&USER, &spec, false);
        assert_eq!(answer.total, 4);
        assert_eq!(answer.members, ["2", "7"]);
    }

    #[test]
    fn a_count_adds_the_pages_numbers_and_keeps_no_member() {
        let mut pages = Pages::new(false, true);
        let mut first = page(&[], "d:1:1:5");
        first.counted = 1000;
        assert_eq!(pages.add(first), "d:1:1:5");
        let mut last = page(&[], "");
        last.counted = 234;
        pages.add(last);
        assert!(pages.rows.is_empty() && pages.seen.is_empty());
        let answer = pages.answer(&USER, &Spec::default(), false);
        assert_eq!(answer.total, 1234);
        assert!(answer.members.is_empty());
    }

    #[test]
    fn ordered_pages_sort_by_score_with_the_unscored_last() {
        let mut pages = Pages::new(true, false);
        pages.add(page(&["a", "2", "b", "5", "c", "nan", "d", "5"], ""));
        let spec = Spec {
            order: Some((0, true)),
            ..Spec::default()
        };
        let answer = pages.answer(&USER, &spec, true);
        assert_eq!(answer.members, ["d", "b", "a", "c"]);
        assert_eq!(answer.scores[..3], [5.0, 5.0, 2.0]);
        assert!(answer.scores[3].is_nan());
    }
}
