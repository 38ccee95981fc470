//! Paged lists: a list of matches or of releases shown five at a time, with ◀ / ▶ buttons that
//! edit the same message in place.
//!
//! Policy, in one place:
//! - **Rendered once, stored whole.** The worker renders every page (text and keyboard) when
//!   the job runs and stores them (`Ledger::store_list`, `Keys::pages`) for as long as the
//!   list's buttons live. A page turn is decided and answered in tap.lua from the stored page:
//!   no job, no MoviePilot call.
//! - **Bound to the item shown (#258).** Every action button names its item by its absolute
//!   place in the stored list (`下载 7` is release 7 wherever it is shown), never by its place
//!   on a page, and items are numbered absolutely (page 2 shows 6 to 10). Which page a message
//!   shows is nobody's state: the tapped button carries everything.
//! - **Page buttons are not once-only.** One token per page ("show page k", `TokenAction::Page`)
//!   serves the ◀ of the page after it, the number of its own page and the ▶ of the page before
//!   it; it is read-only, reusable until the list expires, for the list's user in its chat.
//! - **Small pages.** [`PAGE_SIZE`] items a page: a page of the real v2.5.6 bodies stays well
//!   inside a photo's caption (1024 characters), so a list can be a poster's caption too.

use std::ops::Range;

use crate::i18n::Render;
use crate::ledger::{Job, Owner, TokenAction, TokenGroup};
use crate::moviepilot::{MATCHES_ASKED, MediaItem, MpError};
use crate::telegram::keyboard::Keyboard;
use crate::worker::context::{Buttons, Context, Done, ledger_error, owner};

/// Items on one page. Five releases with 75-character titles measure about 600 characters with
/// their header (453 to 597 measured, `downloads::a_stored_list_stays_under_its_bound...`: a
/// line is site, title, size, seeders and promotion), leaving room under Telegram's
/// 1024-character caption for longer titles; eight, MoviePilot's own page, would not.
pub const PAGE_SIZE: usize = 5;

/// How many pages `items` make (at least one).
pub fn page_count(items: usize) -> usize {
    items.div_ceil(PAGE_SIZE).max(1)
}

/// The indexes (0-based, into the whole list) of the items on page `page` (1-based).
pub fn page_range(page: usize, items: usize) -> Range<usize> {
    let start = ((page - 1) * PAGE_SIZE).min(items);
    start..(start + PAGE_SIZE).min(items)
}

/// A list rendered page by page, with the tokens of every button on every page.
pub struct Paged {
    /// Each page's text and keyboard (InlineKeyboardMarkup JSON), page 1 first.
    pub pages: Vec<(String, String)>,
    pub group: TokenGroup,
}

impl Paged {
    /// The bytes stored for the pages (their texts and keyboards).
    pub fn bytes(&self) -> usize {
        self.pages.iter().map(|(t, m)| t.len() + m.len()).sum()
    }

    /// Page 1's text: the reply that shows the list.
    pub fn first_text(&self) -> String {
        self.pages.first().map(|p| p.0.clone()).unwrap_or_default()
    }

    /// Page 1's keyboard with every page's tokens (complete.lua creates them all with the
    /// reply); `None` without any button.
    pub fn buttons(&self) -> Option<Buttons> {
        let (_, markup) = self.pages.first()?;
        (!self.group.tokens.is_empty()).then(|| Buttons {
            markup: markup.clone(),
            tokens: self.group.spec().to_string(),
        })
    }
}

/// The page buttons of one list: the callback data of "show page k" at index k - 1.
pub struct Nav {
    data: Vec<String>,
}

impl Nav {
    /// One token per page of `pages` for list `list` (the job that stores it), owned by
    /// `owner`; none for a single page, which has no page buttons.
    pub fn new(
        group: &mut TokenGroup,
        owner: Owner,
        list: u64,
        pages: usize,
        render: &Render,
    ) -> Nav {
        let data = if pages > 1 {
            (1..=pages)
                .map(|page| {
                    let label = render.page_button(page, pages);
                    group.add(owner, &label, TokenAction::Page { list, page }, None)
                })
                .collect()
        } else {
            Vec::new()
        };
        Nav { data }
    }

    /// Page `page`'s row: ◀ (but on the first), `page/N` (shows the page again: Telegram's
    /// "message is not modified", a quiet success), ▶ (but on the last); none for one page.
    pub fn row(&self, page: usize, render: &Render) -> Vec<(String, String)> {
        let pages = self.data.len();
        if pages < 2 {
            return Vec::new();
        }
        let mut row = Vec::new();
        if page > 1 {
            row.push((
                render.previous_page().to_string(),
                self.data[page - 2].clone(),
            ));
        }
        row.push((render.page_button(page, pages), self.data[page - 1].clone()));
        if page < pages {
            row.push((render.next_page().to_string(), self.data[page].clone()));
        }
        row
    }

    /// `keyboard` with page `page`'s row under it.
    pub fn under(&self, keyboard: Keyboard, page: usize, render: &Render) -> Keyboard {
        keyboard.row(self.row(page, render))
    }
}

/// The matches a list keeps for paging, and so its bound: every match MoviePilot is asked for
/// (six pages). Six pages' texts and keyboards are about 12 KB at most.
pub const MATCHES_KEPT: usize = MATCHES_ASKED;

/// The answer of a list of `items` (MoviePilot's matches), paged: `text(page, kept)` renders the
/// matches of a page (their indexes) with the header, `row(group, i)` the buttons of match `i`
/// (none for a match that cannot be acted on, or for a viewer). Page 1 is the reply, with every
/// page's buttons and the first match's poster; the pages are stored for their page buttons (as
/// long as its buttons live, `telegram.confirm_ttl_secs`) when there is more than one.
pub async fn matches(
    cx: &Context<'_>,
    job: &Job,
    items: &[MediaItem],
    text: impl Fn(Range<usize>, usize) -> String,
    row: impl FnMut(&mut TokenGroup, usize) -> Vec<(String, String)>,
) -> Result<Done, MpError> {
    let kept = items.len().min(MATCHES_KEPT);
    let paged = paged(cx, job, kept, |range| text(range, kept), row).await?;
    Ok(Done {
        reply: paged.first_text(),
        result: format!("{} results", items.len()),
        buttons: paged.buttons(),
        photo: first_poster(items),
        ..Done::default()
    })
}

/// `len` items, paged: `text(range)` renders a page of them, `row(group, i)` the buttons of item
/// `i` (none: no row), each page with its page buttons under it; the pages are stored for those
/// buttons (as long as they live, `telegram.confirm_ttl_secs`) when there is more than one.
pub async fn paged(
    cx: &Context<'_>,
    job: &Job,
    len: usize,
    text: impl Fn(Range<usize>) -> String,
    mut row: impl FnMut(&mut TokenGroup, usize) -> Vec<(String, String)>,
) -> Result<Paged, MpError> {
    let mut group = TokenGroup::new(cx.button_ttl());
    let count = page_count(len);
    let nav = Nav::new(&mut group, owner(job), job.id, count, &cx.render);
    let mut pages = Vec::with_capacity(count);
    for page in 1..=count {
        let range = page_range(page, len);
        let mut keyboard = Keyboard::new();
        for i in range.clone() {
            keyboard = keyboard.row(row(&mut group, i));
        }
        keyboard = nav.under(keyboard, page, &cx.render);
        pages.push((text(range), keyboard.to_json()));
    }
    let paged = Paged { pages, group };
    if count > 1 {
        cx.ledger
            .store_list(job.id, cx.button_ttl(), &paged.pages, None)
            .await
            .map_err(ledger_error)?;
    }
    Ok(paged)
}

fn first_poster(items: &[MediaItem]) -> Option<String> {
    items.first()?.poster.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_every_item_once_in_order() {
        assert_eq!(page_count(0), 1);
        assert_eq!(page_count(5), 1);
        assert_eq!(page_count(6), 2);
        assert_eq!(page_range(1, 12), 0..5);
        assert_eq!(page_range(2, 12), 5..10);
        assert_eq!(page_range(3, 12), 10..12);
        assert_eq!(page_range(1, 0), 0..0);
    }
}
