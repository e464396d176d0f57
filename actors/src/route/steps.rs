//! Which plugins of a call changed its value or were skipped: a mask over the hook's steps
//! (one word inline for up to 64 plugins) named through the route's list of names on demand, so
//! an answer carries no vector and no per-name reference count.

use std::fmt;
use std::sync::Arc;

/// A set of step indexes: one word inline (64 plugins), more words only beyond that (a boxed
/// slice: an empty one allocates nothing and is a word smaller than a `Vec`).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    low: u64,
    /// The words beyond the first 64 steps, behind one thin pointer (none below 65 plugins), so
    /// a call's two masks take two words each.
    #[allow(clippy::box_collection)] // a thin pointer on purpose: the common case is `None`
    high: Option<Box<Vec<u64>>>,
}

impl Marks {
    #[inline]
    pub(crate) fn insert(&mut self, step: usize) {
        if step < 64 {
            self.low |= 1 << step;
        } else {
            self.insert_high(step);
        }
    }

    /// Beyond 64 plugins: the boxed words, grown as needed.
    #[cold]
    fn insert_high(&mut self, step: usize) {
        let word = step / 64 - 1;
        let high = self.high.get_or_insert_with(Box::default);
        if high.len() <= word {
            high.resize(word + 1, 0);
        }
        if let Some(bits) = high.get_mut(word) {
            *bits |= 1 << (step % 64);
        }
    }

    #[inline]
    pub(crate) fn contains(&self, step: usize) -> bool {
        if step < 64 {
            return self.low & (1 << step) != 0;
        }
        self.high_words()
            .get(step / 64 - 1)
            .is_some_and(|word| word & (1 << (step % 64)) != 0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.low == 0 && self.high_words().iter().all(|w| *w == 0)
    }

    fn count(&self) -> usize {
        let high: u32 = self.high_words().iter().map(|w| w.count_ones()).sum();
        (self.low.count_ones() + high) as usize
    }

    fn high_words(&self) -> &[u64] {
        self.high.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// Plugins of one call named by their step in the hook's route, in load order: those that
/// changed the value ([`Outcome::changed_by`]) or were skipped ([`Outcome::failed`]).
///
/// Iterate it for the names; compare it with a list of names in tests.
///
/// [`Outcome::changed_by`]: crate::Outcome::changed_by
/// [`Outcome::failed`]: crate::Outcome::failed
#[derive(Clone, Default)]
pub struct Steps {
    marks: Marks,
    /// The route's names; `None` when no step is marked (nothing to name, nothing counted).
    names: Option<Arc<[Arc<str>]>>,
}

impl Steps {
    pub(crate) fn new(marks: Marks, names: &Arc<[Arc<str>]>) -> Self {
        let names = (!marks.is_empty()).then(|| names.clone());
        Self { marks, names }
    }

    /// The marked plugins' names, in load order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<str>> + '_ {
        let names: &[Arc<str>] = self.names.as_deref().unwrap_or(&[]);
        names
            .iter()
            .enumerate()
            .filter(|(step, _)| self.marks.contains(*step))
            .map(|(_, name)| name)
    }

    /// How many plugins are marked.
    pub fn len(&self) -> usize {
        if self.names.is_none() {
            return 0;
        }
        self.marks.count()
    }

    /// Whether no plugin is marked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the plugin named `name` is marked.
    pub fn contains(&self, name: &str) -> bool {
        self.iter().any(|marked| &**marked == name)
    }

    /// The marked plugins' names as a vector.
    pub fn to_vec(&self) -> Vec<Arc<str>> {
        self.iter().cloned().collect()
    }
}

impl<'a> IntoIterator for &'a Steps {
    type Item = &'a Arc<str>;
    type IntoIter = Box<dyn Iterator<Item = &'a Arc<str>> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

impl fmt::Debug for Steps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Steps {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for Steps {
    fn eq(&self, other: &[S]) -> bool {
        self.iter()
            .map(|n| &**n)
            .eq(other.iter().map(AsRef::as_ref))
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for Steps {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for Steps {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == other[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_name_marked_plugins_in_order_beyond_one_word() {
        let names: Arc<[Arc<str>]> = (0..130).map(|i| Arc::from(format!("p{i}"))).collect();
        let mut marks = Marks::default();
        for step in [129, 3, 64, 0] {
            marks.insert(step);
        }
        let steps = Steps::new(marks, &names);
        assert_eq!(steps, ["p0", "p3", "p64", "p129"]);
        assert_eq!(steps.len(), 4);
        assert!(steps.contains("p64") && !steps.contains("p1"));
        let none = Steps::new(Marks::default(), &names);
        assert!(none.is_empty() && none.iter().next().is_none());
        assert_eq!(none, Vec::<&str>::new());
    }
}
