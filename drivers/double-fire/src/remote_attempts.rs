//! What a caller was told about one intended effect at the provider, in
//! order (the first answer, then every retry), and the one rule checks 11
//! to 17 judge it by: until it settles, only "unknown" or "in progress".

use crate::checks::short;
use crate::doors::Answer;

/// The answers of one intended effect: the first, then every retry.
pub(crate) struct Attempts {
    pub(crate) first: Answer,
    pub(crate) retries: Vec<Answer>,
}

impl Attempts {
    pub(crate) fn last(&self) -> &Answer {
        self.retries.last().unwrap_or(&self.first)
    }

    pub(crate) fn settled(&self) -> bool {
        matches!(
            self.last(),
            Answer::Created { .. } | Answer::Replayed { .. }
        )
    }

    /// While not settled, only "unknown" or "in progress" may be said.
    pub(crate) fn honest_meanwhile(&self) -> bool {
        let n = self.retries.len();
        self.retries
            .iter()
            .take(n.saturating_sub(1))
            .all(|a| matches!(a, Answer::Unknown | Answer::InProgress))
    }

    pub(crate) fn describe(&self) -> String {
        let retries: Vec<_> = self.retries.iter().map(short).collect();
        let mut compact: Vec<String> = Vec::new();
        for r in retries {
            match compact.last_mut() {
                Some(last) if last.starts_with(&r) => {
                    let times = last
                        .rsplit_once(" ×")
                        .and_then(|(_, n)| n.parse::<u32>().ok())
                        .unwrap_or(1);
                    *last = format!("{r} ×{}", times + 1);
                }
                _ => compact.push(r),
            }
        }
        format!(
            "first: {}, retries: [{}]",
            short(&self.first),
            compact.join(", ")
        )
    }
}
