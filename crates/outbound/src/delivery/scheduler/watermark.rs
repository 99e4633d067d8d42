//! Which messages have ended, in acceptance order: what a `flush` barrier waits for.

use std::collections::VecDeque;

/// Which messages have ended, in acceptance order, for `flush` barriers.
#[derive(Default)]
pub(super) struct Watermark {
    pub(super) base: u64,
    ended: VecDeque<bool>,
}

impl Watermark {
    pub(super) fn accept(&mut self) {
        self.ended.push_back(false);
    }

    /// Marks `seq` ended; true when the low water mark moved.
    pub(super) fn end(&mut self, seq: u64) -> bool {
        let Some(slot) = seq
            .checked_sub(self.base)
            .and_then(|i| self.ended.get_mut(i as usize))
        else {
            return false;
        };
        *slot = true;
        let before = self.base;
        while self.ended.front() == Some(&true) {
            self.ended.pop_front();
            self.base += 1;
        }
        self.base != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_moves_past_ended_messages_in_order() {
        let mut w = Watermark::default();
        for _ in 0..4 {
            w.accept();
        }
        assert!(!w.end(2));
        assert_eq!(w.base, 0);
        assert!(w.end(0));
        assert_eq!(w.base, 1);
        assert!(w.end(1));
        assert_eq!(w.base, 3, "2 had ended already");
        assert!(!w.end(1), "twice is harmless");
        assert!(w.end(3));
        assert_eq!(w.base, 4);
    }
}
