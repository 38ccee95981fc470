//! Sending one reply: its tries, each a Bot API call or a few (an edit, a photo, a text split
//! into messages), and what each of Telegram's refusals changes for the next (the error table
//! of the policy in `dispatch`'s doc). The dispatcher's loop decides when a reply goes; this
//! file decides how, so it is its own.

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::backoff;
use crate::ledger::{Form, MarkupOp, ReplyEntry};
use crate::metrics::METRICS;
use crate::shutdown::sleep_or_stop;
use crate::telegram::api::ApiError;
use crate::vocabulary::ReplyKind;

use super::form::{caption_of, is_http, poster, split_message, url_for_log};
use super::wire::{
    CaptionBody, InputMediaPhoto, MediaBody, PhotoBody, ReplyParameters, SentMessage, TextBody,
};
use super::{CALL_TIMEOUT, Dispatcher, recorded};

/// How one send ended.
pub(super) enum Sent {
    /// Delivered (or already as wanted): the message id, if Telegram gave one, and its form.
    Delivered(Option<i64>, Form),
    /// Will never succeed as it is; the reason is recorded.
    Failed(String),
    /// Shutdown came while waiting to try again: nothing recorded, the reply stays pending and
    /// is sent after the restart.
    Stopped,
}

/// What reply_begin.lua handed over for one reply: the message its text replaces and what
/// is known of the forms.
pub(super) struct Plan {
    /// The message to edit: the entry's own target, else the job's "working on it" message.
    edit_target: Option<i64>,
    /// The job's "working on it" message, when the entry has no target of its own (always a
    /// text message): deleted after a result sent as a photo.
    progress: Option<i64>,
    /// The message to edit is known to be a photo (the job's reply went as one).
    caption: bool,
    /// An earlier attempt settled on text (its poster was refused).
    text_only: bool,
}

/// What reply_begin.lua's answer means for one reply's sends.
pub(super) fn plan(
    reply: &ReplyEntry,
    progress: Option<i64>,
    form: Option<Form>,
    photo_message_id: Option<i64>,
) -> Plan {
    // A job's result replaces its "working on it" message (reply_begin reads that message only
    // for a reply that has a job); an entry with a target of its own edits that one.
    let progress = progress
        .filter(|_| reply.edit_message_id.is_none())
        .filter(|_| reply.kind.is_some_and(ReplyKind::reports_on_job));
    let edit_target = reply.edit_message_id.or(progress);
    Plan {
        edit_target,
        progress,
        caption: reply.edit_message_id.is_some() && reply.edit_message_id == photo_message_id,
        text_only: form == Some(Form::Text),
    }
}

/// Where a reply's tries stand: what an earlier refusal changed for the next try.
struct Tries<'r> {
    chat: i64,
    /// The forum topic of a new message, and the message it answers: both dropped after
    /// Telegram refused the topic (deleted, closed, or no topic at all), so the reply lands in
    /// the chat's General topic (a reply reference would pull it back into the topic).
    thread: Option<i64>,
    reply_to: Option<i64>,
    failures: u32,
    migrated: bool,
    edit_allowed: bool,
    /// The poster of a new photo message; `None`: text.
    photo: Option<&'r str>,
    /// The message to edit is a photo: its caption is edited, not its text.
    caption: bool,
    /// A new poster for the edited photo (editMessageMedia); dropped after a refusal.
    media: Option<&'r str>,
}

impl Tries<'_> {
    /// The form the message stands in once this try succeeds.
    fn form(&self, edit_target: Option<i64>) -> Form {
        if self.photo.is_some() || (edit_target.is_some() && self.caption) {
            Form::Photo
        } else {
            Form::Text
        }
    }
}

/// What to do after a refused try.
enum Next {
    /// Try again at once (something changed: the chat, the form).
    Now,
    /// Telegram refused the poster: record that the reply goes as text, then send it.
    TextInstead,
    /// Try again after this long.
    After(Duration),
    Give(Sent),
}

impl Dispatcher {
    /// Tries one reply until it is delivered, refused for good, or shutdown comes: each refusal
    /// changes the next try as Telegram's answer says (`after_refusal`).
    pub(super) async fn send_with_retries(&self, reply: &ReplyEntry, plan: &Plan) -> Sent {
        let poster_on = self.posters && !plan.text_only;
        let mut tries = Tries {
            chat: reply.chat_id,
            thread: reply.thread_id,
            reply_to: reply.reply_to,
            failures: 0,
            migrated: false,
            edit_allowed: true,
            photo: poster(reply, poster_on),
            caption: plan.caption,
            media: reply
                .photo
                .as_deref()
                .filter(|_| poster_on)
                .filter(|u| is_http(u)),
        };
        loop {
            // A new photo replaces no message: the progress message is deleted after it.
            let edit_target = plan
                .edit_target
                .filter(|_| tries.edit_allowed && tries.photo.is_none());
            let refused = match self.send_once(reply, &tries, edit_target).await {
                Ok(id) => {
                    if let (Some(_), Some(progress)) = (tries.photo, plan.progress) {
                        self.delete_progress(tries.chat, progress).await;
                    }
                    return Sent::Delivered(id, tries.form(edit_target));
                }
                Err(e) => e,
            };
            match self.after_refusal(reply, &mut tries, edit_target, refused) {
                Next::Now => {}
                Next::TextInstead => {
                    if let Err(sent) = self.record_text_instead(reply).await {
                        return sent;
                    }
                    tries.photo = None;
                }
                Next::After(wait) => {
                    if sleep_or_stop(wait, &self.stop).await {
                        return Sent::Stopped;
                    }
                }
                Next::Give(sent) => return sent,
            }
        }
    }

    /// Records that a reply whose poster was refused goes as text (reply_form.lua), before the
    /// text is sent: after a crash here the text goes, once, and the photo is not tried again.
    async fn record_text_instead(&self, reply: &ReplyEntry) -> Result<(), Sent> {
        let recorded = recorded("the reply's form", Some(&self.stop), || {
            self.ledger.reply_form(reply, &self.consumer, Form::Text)
        })
        .await;
        match recorded {
            Ok(true) => {
                crate::crash_point!("dispatch.before_text_fallback");
                Ok(())
            }
            Ok(false) => {
                tracing::warn!("another dispatcher took this reply over; leaving it to that one");
                Err(Sent::Stopped)
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot record the switch to text; the reply stays queued");
                Err(Sent::Stopped)
            }
        }
    }

    /// Deletes a job's "working on it" message after its result went as a photo: a text message
    /// cannot become one. A failure leaves it (it is only a stale notice), logged.
    async fn delete_progress(&self, chat: i64, message_id: i64) {
        self.limiter.acquire(chat).await;
        let body = json!({"chat_id": chat, "message_id": message_id});
        let deleted = self
            .api
            .call::<Value>("deleteMessage", &body, CALL_TIMEOUT)
            .await;
        self.limiter.sent(chat);
        match deleted {
            Ok(_) => {}
            Err(ApiError::Api { description, .. })
                if description.contains("message to delete not found") => {}
            Err(e) => tracing::warn!(
                error = %e,
                message_id,
                "could not delete the \"working on it\" message after its result went as a photo"
            ),
        }
    }

    /// What a refused try means for the next one.
    fn after_refusal(
        &self,
        reply: &ReplyEntry,
        tries: &mut Tries<'_>,
        edit_target: Option<i64>,
        refused: ApiError,
    ) -> Next {
        if tries.thread.is_some() && refused.is_thread_refused() {
            self.thread_refused(tries, &refused);
            return Next::Now;
        }
        if let ApiError::Api {
            code: 400,
            description,
        } = &refused
            && let Some(next) = other_form(tries, edit_target, description)
        {
            return next;
        }
        match refused {
            ApiError::RetryAfter(wait) => self.slow_down(tries.chat, wait),
            ApiError::Network(reason) => self.after_network_error(tries, &reason),
            ApiError::Migrated(new_chat) if !tries.migrated => moved(tries, new_chat),
            // A definite refusal of the poster (it could not be fetched, is no image, ...):
            // nothing was sent, so the text goes now. Only a 400 is definite; a timeout or a
            // 5xx may have delivered the photo and is retried as the photo above.
            ApiError::Api {
                code: 400,
                description,
            } if tries.photo.is_some() => poster_refused(tries, &description),
            ApiError::Api { description, .. } if is_not_modified(&description) => Next::Give(
                Sent::Delivered(reply.edit_message_id, tries.form(edit_target)),
            ),
            // A live card's message the person deleted: the card stops (reply_end.lua reads
            // this text), and nothing new is sent in its place.
            ApiError::Api { description, .. }
                if reply.kind == Some(ReplyKind::Card) && is_edit_target_gone(&description) =>
            {
                Next::Give(Sent::Failed(format!(
                    "message to edit not found (the card's message is gone): {description}"
                )))
            }
            ApiError::Api { description, .. }
                if tries.edit_allowed && is_edit_target_gone(&description) =>
            {
                edit_target_gone(tries)
            }
            ApiError::Unauthorized => token_refused(),
            e => Next::Give(Sent::Failed(e.to_string())),
        }
    }

    /// Telegram refused the topic ("message thread not found", `TOPIC_CLOSED`): not a failure
    /// of the reply, which goes again at once, once, without the thread and the reply
    /// reference, to the chat's General topic. Logged once an hour per chat and topic.
    fn thread_refused(&self, tries: &mut Tries<'_>, refused: &ApiError) {
        METRICS.reply("thread_refused");
        let route = (tries.chat, tries.thread.unwrap_or_default());
        if self.thread_refusals.first_in_the_hour(route) {
            tracing::warn!(
                chat = route.0,
                thread = route.1,
                reason = %refused,
                "Telegram refused the forum topic; sending to the chat's General topic \
                 (logged once an hour for this topic)"
            );
        }
        tries.thread = None;
        tries.reply_to = None;
    }

    /// A 429: nothing goes to the chat for exactly Telegram's `retry_after`; this reply is tried
    /// again once it has passed.
    fn slow_down(&self, chat: i64, wait: Duration) -> Next {
        METRICS.telegram_429.inc();
        METRICS.reply("retried");
        tracing::warn!(wait = ?wait, "Telegram asked to slow down (429); waiting exactly that long");
        self.limiter.pause_chat(chat, wait);
        Next::Now
    }

    /// No answer or a 5xx: tried again after a backoff, until `max_attempts` failures.
    fn after_network_error(&self, tries: &mut Tries<'_>, reason: &str) -> Next {
        tries.failures += 1;
        if tries.failures >= self.cfg.max_attempts {
            return Next::Give(Sent::Failed(format!(
                "gave up after {} attempts: {reason}",
                tries.failures
            )));
        }
        METRICS.reply("retried");
        let delay = self.retry_delay(tries.failures);
        tracing::warn!(reason = %reason, retry_in = ?delay, "send failed; retrying");
        Next::After(delay)
    }

    fn retry_delay(&self, failures: u32) -> Duration {
        let min = Duration::from_millis(self.cfg.retry_min_delay_ms);
        let max = Duration::from_millis(self.cfg.retry_max_delay_ms);
        backoff::nth(backoff::jittered(min, max), failures)
    }

    /// One delivery attempt: an edit (of the given message, or of the job's progress message),
    /// a photo with the text as its caption, or new messages, split at 4096 characters; each
    /// Bot API call waits for its rate slot.
    async fn send_once(
        &self,
        reply: &ReplyEntry,
        tries: &Tries<'_>,
        edit_target: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let result = self.send_once_unpaced(reply, tries, edit_target).await;
        self.limiter.sent(tries.chat);
        result
    }

    async fn send_once_unpaced(
        &self,
        reply: &ReplyEntry,
        tries: &Tries<'_>,
        edit_target: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let chat = tries.chat;
        // Checked to be JSON and passed on as text: the stored markup is not rebuilt as a
        // `Value` tree and serialised again for every message.
        let markup: Option<Box<RawValue>> = reply
            .markup
            .as_ref()
            .and_then(|m| RawValue::from_string(m.clone()).ok());
        if let Some(op) = reply.op {
            return self.edit_markup(reply, chat, op, markup.as_deref()).await;
        }
        let reply_parameters = tries.reply_to.map(|to| ReplyParameters {
            allow_sending_without_reply: true,
            message_id: to,
        });
        if let (Some(message_id), true) = (edit_target, tries.caption) {
            return self
                .edit_caption(reply, chat, message_id, tries.media, markup.as_deref())
                .await;
        }
        if let Some(photo) = tries.photo {
            // Plain text, as the text of a message: no parse_mode.
            let body = PhotoBody {
                chat_id: chat,
                message_thread_id: tries.thread,
                photo,
                caption: (!reply.text.is_empty()).then_some(reply.text.as_str()),
                reply_markup: markup.as_deref(),
                reply_parameters,
                disable_notification: reply.silent.then_some(true),
            };
            self.limiter.acquire(chat).await;
            let message: SentMessage = self.api.call("sendPhoto", &body, CALL_TIMEOUT).await?;
            return Ok(message.message_id);
        }
        self.send_text(
            reply,
            (chat, tries.thread),
            edit_target,
            markup.as_deref(),
            reply_parameters,
        )
        .await
    }

    /// A text edit of a photo message: its caption (cut to a caption's length), with a new
    /// image (editMessageMedia) when the entry brings one.
    async fn edit_caption(
        &self,
        reply: &ReplyEntry,
        chat: i64,
        message_id: i64,
        media: Option<&str>,
        markup: Option<&RawValue>,
    ) -> Result<Option<i64>, ApiError> {
        let caption = caption_of(&reply.text);
        self.limiter.acquire(chat).await;
        let message: SentMessage = match media {
            Some(url) => {
                let body = MediaBody {
                    chat_id: chat,
                    message_id,
                    media: InputMediaPhoto {
                        kind: "photo",
                        media: url,
                        caption: &caption,
                    },
                    reply_markup: markup,
                };
                self.api
                    .call("editMessageMedia", &body, CALL_TIMEOUT)
                    .await?
            }
            None => {
                let body = CaptionBody {
                    chat_id: chat,
                    message_id,
                    caption: &caption,
                    reply_markup: markup,
                };
                self.api
                    .call("editMessageCaption", &body, CALL_TIMEOUT)
                    .await?
            }
        };
        Ok(message.message_id.or(Some(message_id)))
    }

    /// clear_markup removes a message's buttons; edit_markup replaces them (a release list
    /// with a used `✓ 下载 k` button).
    async fn edit_markup(
        &self,
        reply: &ReplyEntry,
        chat: i64,
        op: MarkupOp,
        markup: Option<&RawValue>,
    ) -> Result<Option<i64>, ApiError> {
        let Some(message_id) = reply.edit_message_id else {
            return Ok(None);
        };
        self.limiter.acquire(chat).await;
        let keyboard: Value = match (op, markup) {
            (MarkupOp::Edit, Some(m)) => serde_json::from_str(m.get()).unwrap_or_default(),
            _ => json!({"inline_keyboard": []}),
        };
        let body = json!({"chat_id": chat, "message_id": message_id,
                          "reply_markup": keyboard});
        self.api
            .call::<Value>("editMessageReplyMarkup", &body, CALL_TIMEOUT)
            .await?;
        Ok(Some(message_id))
    }

    /// The text as new messages, split at 4096 characters (the first answering the user's
    /// message), or its first part as an edit of `edit_target`; the buttons go under the last.
    async fn send_text(
        &self,
        reply: &ReplyEntry,
        (chat, thread): (i64, Option<i64>),
        edit_target: Option<i64>,
        markup: Option<&RawValue>,
        reply_parameters: Option<ReplyParameters>,
    ) -> Result<Option<i64>, ApiError> {
        let chunks = split_message(&reply.text);
        let mut first_id = None;
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let mut body = TextBody {
                chat_id: chat,
                message_thread_id: thread,
                message_id: None,
                reply_markup: if last { markup } else { None },
                reply_parameters: None,
                disable_notification: reply.silent.then_some(true),
                text: chunk,
            };
            self.limiter.acquire(chat).await;
            let message: SentMessage = match (i, edit_target) {
                (0, Some(message_id)) => {
                    body.message_id = Some(message_id);
                    body.message_thread_id = None;
                    body.disable_notification = None;
                    self.api
                        .call("editMessageText", &body, CALL_TIMEOUT)
                        .await?
                }
                _ => {
                    if i == 0 {
                        body.reply_parameters = reply_parameters;
                    }
                    self.api.call("sendMessage", &body, CALL_TIMEOUT).await?
                }
            };
            self.limiter.sent(chat);
            let id = message.message_id;
            first_id = first_id.or(id).or(edit_target);
        }
        Ok(first_id)
    }
}

/// The group became a supergroup: the reply goes to its new id, once.
fn moved(tries: &mut Tries<'_>, new_chat: i64) -> Next {
    tracing::warn!(new_chat, "the group moved to a supergroup; sending there");
    tries.migrated = true;
    tries.chat = new_chat;
    Next::Now
}

/// Telegram refused the poster of a new photo message: the reply goes as text instead.
fn poster_refused(tries: &Tries<'_>, description: &str) -> Next {
    METRICS.reply("poster_refused");
    tracing::warn!(
        poster = %url_for_log(tries.photo.unwrap_or_default()),
        reason = %description,
        "Telegram refused the poster; sending the text alone"
    );
    Next::TextInstead
}

/// The message to edit was deleted or is too old to edit: a new message goes instead.
fn edit_target_gone(tries: &mut Tries<'_>) -> Next {
    tracing::info!("the message to edit is gone; sending a new one");
    tries.edit_allowed = false;
    Next::Now
}

/// A 401: nothing is marked failed; the reply waits (a minute at a time) for a fixed token.
fn token_refused() -> Next {
    tracing::error!(
        "Telegram rejects the bot token (401): replies wait until \
         ONCEBOT__TELEGRAM__TOKEN is fixed and oncebot restarted"
    );
    Next::After(Duration::from_secs(60))
}

/// Telegram's answer to an edit in the wrong form: the message is a photo ("there is no text
/// in the message to edit") or a text ("there is no caption ..."); the edit is tried again in
/// the other form. A new poster Telegram refused for a photo's edit is left out (its caption is
/// edited alone). `None`: the refusal is not about the form.
fn other_form(tries: &mut Tries<'_>, edit_target: Option<i64>, description: &str) -> Option<Next> {
    edit_target?;
    if description.contains("there is no text in the message to edit") && !tries.caption {
        tracing::info!("the message to edit is a photo; editing its caption");
        tries.caption = true;
        return Some(Next::Now);
    }
    // editMessageMedia of a text message says "no media".
    let text_message = description.contains("there is no caption in the message to edit")
        || description.contains("there is no media in the message to edit");
    if text_message && tries.caption {
        tracing::info!("the message to edit is a text; editing its text");
        tries.caption = false;
        return Some(Next::Now);
    }
    if tries.caption && tries.media.is_some() && !is_not_modified(description) {
        tracing::warn!(reason = %description, "Telegram refused the new poster; editing the caption alone");
        tries.media = None;
        return Some(Next::Now);
    }
    None
}

fn is_not_modified(description: &str) -> bool {
    description.contains("message is not modified")
}

fn is_edit_target_gone(description: &str) -> bool {
    description.contains("message to edit not found")
        || description.contains("message can't be edited")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_topic_is_logged_once_an_hour_per_topic() {
        let seen = super::super::ThreadRefusals::default();
        assert!(seen.first_in_the_hour((-100, 7)));
        assert!(!seen.first_in_the_hour((-100, 7)), "once an hour");
        assert!(seen.first_in_the_hour((-100, 8)), "another topic");
        let closed = ApiError::Api {
            code: 400,
            description: "Bad Request: TOPIC_CLOSED".into(),
        };
        let gone = ApiError::Api {
            code: 400,
            description: "Bad Request: message thread not found".into(),
        };
        assert!(closed.is_thread_refused() && gone.is_thread_refused());
        let other = ApiError::Api {
            code: 400,
            description: "Bad Request: chat not found".into(),
        };
        assert!(!other.is_thread_refused());
    }

    #[test]
    fn telegrams_answer_to_an_edit_in_the_wrong_form_switches_the_form() {
        let mut tries = Tries {
            chat: 1,
            thread: None,
            reply_to: None,
            failures: 0,
            migrated: false,
            edit_allowed: true,
            photo: None,
            caption: false,
            media: Some("https://image.tmdb.org/t/p/w500/d.jpg"),
        };
        let no_text = "Bad Request: there is no text in the message to edit";
        assert!(
            other_form(&mut tries, None, no_text).is_none(),
            "no edit, no form"
        );
        assert!(matches!(
            other_form(&mut tries, Some(5), no_text),
            Some(Next::Now)
        ));
        assert!(tries.caption, "a photo: its caption");
        let refused = "Bad Request: failed to get HTTP URL content";
        assert!(matches!(
            other_form(&mut tries, Some(5), refused),
            Some(Next::Now)
        ));
        assert_eq!(
            tries.media, None,
            "the new poster refused: the caption alone"
        );
        assert!(other_form(&mut tries, Some(5), refused).is_none());
        let no_caption = "Bad Request: there is no caption in the message to edit";
        assert!(matches!(
            other_form(&mut tries, Some(5), no_caption),
            Some(Next::Now)
        ));
        assert!(!tries.caption, "a text: its text");
        assert!(
            other_form(&mut tries, Some(5), no_caption).is_none(),
            "asked once"
        );
    }

    #[test]
    fn an_edit_of_the_jobs_photo_reply_edits_its_caption() {
        let edit = ReplyEntry {
            edit_message_id: Some(7),
            kind: Some(ReplyKind::Result),
            ..ReplyEntry::default()
        };
        let p = plan(&edit, Some(3), None, Some(7));
        assert_eq!(
            (p.edit_target, p.progress, p.caption),
            (Some(7), None, true)
        );
        let other = plan(&edit, None, None, Some(8));
        assert!(!other.caption, "another message's form is not known");
        let result = ReplyEntry {
            kind: Some(ReplyKind::Result),
            ..ReplyEntry::default()
        };
        let p = plan(&result, Some(3), Some(Form::Text), None);
        assert_eq!((p.edit_target, p.progress), (Some(3), Some(3)));
        assert!(p.text_only && !p.caption);
    }
}
