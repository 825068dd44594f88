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
    desc: &'static EntityDesc,
    /// The query: an ordered one's matches come with their order scores;
    /// one with a page keeps only its best `offset + n` matches (cut
    /// whenever twice that many are held), so its memory is the page's,
    /// not the answer's. A member met twice is one `seen` holds, or one cut
    /// before, which was behind the cut then and is again.
    spec: Spec,
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
    /// Pages of the query `spec` of `desc`, or of its count.
    pub(crate) fn new(desc: &'static EntityDesc, spec: &Spec, count_only: bool) -> Self {
        Pages {
            desc,
            spec: spec.clone(),
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
            let score = if self.spec.order.is_some() {
                it.next()
                    .and_then(|s| query::parse_score(&s))
                    .unwrap_or(f64::NAN)
            } else {
                f64::NAN
            };
            if self.seen.insert(member.clone()) {
                self.rows.push((member, score));
                self.counted += 1;
            }
        }
        if let Some(keep) = self.spec.page.map(|(offset, n)| offset.saturating_add(n)) {
            if self.rows.len() > keep.saturating_mul(2).max(1024) {
                query::sort_rows(self.desc, &self.spec, &mut self.rows);
                self.rows.truncate(keep);
                self.seen = self.rows.iter().map(|r| r.0.clone()).collect();
            }
        }
        page.cursor
    }

    /// The answer to `spec`: every match counted, the page cut from them in
    /// the query's order; scores kept when `with_scores`.
    pub(crate) fn answer(self, with_scores: bool) -> Answer {
        let mut answer =
            query::answer_of_rows(self.desc, &self.spec, with_scores, self.counted, self.rows);
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
        let spec = Spec {
            page: Some((1, 2)),
            ..Spec::default()
        };
        let mut pages = Pages::new(&USER, &spec, false);
        assert_eq!(pages.add(page(&["10", "2", "7"], "d:1:1:5")), "d:1:1:5");
        assert_eq!(pages.add(page(&["7", "1"], "")), "");
        let answer = pages.answer(false);
        assert_eq!(answer.total, 4);
        assert_eq!(answer.members, ["2", "7"]);
    }

    #[test]
    fn a_count_adds_the_pages_numbers_and_keeps_no_member() {
        let mut pages = Pages::new(&USER, &Spec::default(), true);
        let mut first = page(&[], "d:1:1:5");
        first.counted = 1000;
        assert_eq!(pages.add(first), "d:1:1:5");
        let mut last = page(&[], "");
        last.counted = 234;
        pages.add(last);
        assert!(pages.rows.is_empty() && pages.seen.is_empty());
        let answer = pages.answer(false);
        assert_eq!(answer.total, 1234);
        assert!(answer.members.is_empty());
    }

    #[test]
    fn a_page_keeps_only_its_best_matches_and_each_once() {
        let spec = Spec {
            page: Some((2, 3)),
            ..Spec::default()
        };
        let mut pages = Pages::new(&USER, &spec, false);
        // 5,000 members in pages of 500, from the largest down, with one
        // met again after it was cut (as SSCAN may repeat one).
        for chunk in (0..10u64).rev() {
            let members: Vec<String> = (chunk * 500..chunk * 500 + 500)
                .map(|m| m.to_string())
                .collect();
            let refs: Vec<&str> = members.iter().map(String::as_str).collect();
            pages.add(page(&refs, "d:1:1:5"));
            assert!(pages.rows.len() <= 1024 + 500, "{}", pages.rows.len());
        }
        pages.add(page(&["4999", "3", "2"], ""));
        let answer = pages.answer(false);
        assert_eq!(answer.members, ["2", "3", "4"]);
    }

    #[test]
    fn ordered_pages_sort_by_score_with_the_unscored_last() {
        let spec = Spec {
            order: Some((0, true)),
            ..Spec::default()
        };
        let mut pages = Pages::new(&USER, &spec, false);
        pages.add(page(&["a", "2", "b", "5", "c", "nan", "d", "5"], ""));
        let answer = pages.answer(true);
        assert_eq!(answer.members, ["d", "b", "a", "c"]);
        assert_eq!(answer.scores[..3], [5.0, 5.0, 2.0]);
        assert!(answer.scores[3].is_nan());
    }
}
