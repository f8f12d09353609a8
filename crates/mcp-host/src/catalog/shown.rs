//! One of the catalog's lists as clients see it, read in place: tools and
//! prompts from each server's part in turn (less what lost a name to an
//! earlier server), resources and templates from the merged list.

use std::sync::Arc;

use foldhash::HashSet;

use super::part::{NamedKind, Part};
use crate::upstream::Item;

/// A list of the catalog, in its order, without copying it.
#[derive(Clone, Copy, Debug)]
pub struct Shown<'a> {
    inner: Inner<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    Flat(&'a [Item]),
    Parts {
        parts: &'a [Arc<Part>],
        hidden: &'a [Hidden],
        kind: NamedKind,
        len: usize,
    },
}

/// The items of one part that lost their exposed name to an earlier
/// server's, by position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Hidden {
    pub(super) tools: HashSet<usize>,
    pub(super) prompts: HashSet<usize>,
}

impl Hidden {
    pub(super) fn of(&self, kind: NamedKind) -> &HashSet<usize> {
        match kind {
            NamedKind::Tools => &self.tools,
            NamedKind::Prompts => &self.prompts,
        }
    }
}

impl<'a> Shown<'a> {
    pub(super) fn flat(items: &'a [Item]) -> Shown<'a> {
        Shown {
            inner: Inner::Flat(items),
        }
    }

    pub(super) fn parts(parts: &'a [Arc<Part>], hidden: &'a [Hidden], kind: NamedKind) -> Self {
        let len = parts
            .iter()
            .zip(hidden)
            .map(|(part, hidden)| part.named(kind).items.len() - hidden.of(kind).len())
            .sum();
        Shown {
            inner: Inner::Parts {
                parts,
                hidden,
                kind,
                len,
            },
        }
    }

    /// How many items the list has.
    pub fn len(&self) -> usize {
        match self.inner {
            Inner::Flat(items) => items.len(),
            Inner::Parts { len, .. } => len,
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its items, in order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = &'a Item> + 'a> {
        match self.inner {
            Inner::Flat(items) => Box::new(items.iter()),
            Inner::Parts {
                parts,
                hidden,
                kind,
                ..
            } => Box::new(parts.iter().zip(hidden).flat_map(move |(part, hidden)| {
                let hidden = hidden.of(kind);
                part.named(kind)
                    .items
                    .iter()
                    .enumerate()
                    .filter(move |(at, _)| !hidden.contains(at))
                    .map(|(_, item)| item)
            })),
        }
    }

    /// At most `count` items from position `offset`: whole parts before
    /// it are skipped by their size.
    pub fn page(&self, offset: usize, count: usize) -> Vec<&'a Item> {
        match self.inner {
            Inner::Flat(items) => {
                let end = offset.saturating_add(count).min(items.len());
                items.get(offset..end).unwrap_or_default().iter().collect()
            }
            Inner::Parts {
                parts,
                hidden,
                kind,
                ..
            } => {
                let mut skip = offset;
                let mut page = Vec::with_capacity(count.min(self.len()));
                for (part, hidden) in parts.iter().zip(hidden) {
                    let hidden = hidden.of(kind);
                    let items = &part.named(kind).items;
                    let size = items.len() - hidden.len();
                    if skip >= size {
                        skip -= size;
                        continue;
                    }
                    let shown = items
                        .iter()
                        .enumerate()
                        .filter(|(at, _)| !hidden.contains(at))
                        .map(|(_, item)| item);
                    page.extend(shown.skip(skip).take(count - page.len()));
                    skip = 0;
                    if page.len() == count {
                        break;
                    }
                }
                page
            }
        }
    }
}

impl<'a> IntoIterator for Shown<'a> {
    type Item = &'a Item;
    type IntoIter = Box<dyn Iterator<Item = &'a Item> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
