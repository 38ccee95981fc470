//! `/redo`: the question naming the file MoviePilot deletes and files again, and the outcomes.

use super::{About, Listed, Render, Usage};
use crate::moviepilot::TransferRecord;
use crate::untrusted::clean_line;

impl Render {
    /// `/redo`'s question: the file MoviePilot deletes and the one it files again.
    pub fn confirm_redo(&self, record: &TransferRecord) -> String {
        let (id, title) = (record.id, clean_line(&record.title));
        let (dest, src) = (clean_line(&record.dest), clean_line(&record.src));
        zh_en!(
            self.zh(),
            ("确认重新整理记录 #{id}「{title}」？MoviePilot 会先删除上次整理出的文件：\n{dest}\n再重新整理：\n{src}"),
            ("File transfer record #{id} (\"{title}\") again? MoviePilot first deletes what it filed last time:\n{dest}\nthen files again:\n{src}")
        )
    }

    pub fn no_such_record(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 的整理历史中没有记录 #{id}（重新整理过的记录会换成新编号）。"),
            ("MoviePilot's transfer history has no record #{id} (a record filed again gets a new number).")
        )
    }

    pub fn redo_done(&self, record: &TransferRecord) -> String {
        let (id, title) = (record.id, clean_line(&record.title));
        zh_en!(
            self.zh(),
            ("MoviePilot 已重新整理记录 #{id}「{title}」。"),
            ("MoviePilot filed record #{id} (\"{title}\") again.")
        )
    }

    /// MoviePilot would not file the record again (its own words stay in the job's `error`).
    pub fn redo_refused(&self, id: u64) -> String {
        zh_en!(
            self.zh(),
            ("MoviePilot 没有重新整理记录 #{id}，原因已记录在任务中，管理员可以查看。"),
            ("MoviePilot did not file record #{id} again; why is kept in the job for the admins.")
        )
    }
}

/// `/redo <record>`.
pub const REDO: About = About {
    usage: Usage::Line(|zh| {
        zh_en!(
            zh,
            "用法：/redo <整理记录 ID>（MoviePilot 整理历史中的记录编号）",
            "Usage: /redo <transfer record id> (the record's number in MoviePilot's transfer history)"
        )
    }),
    listed: Listed::Admins {
        menu: |zh| {
            zh_en!(
                zh,
                "重新整理一条整理记录（需确认）",
                "File a transfer record again (asks first)"
            )
        },
        help: |zh| {
            zh_en!(
                zh,
                "/redo <整理记录 ID> 重新整理（需确认）",
                "/redo <transfer record id> file it again (asks first)"
            )
        },
    },
};
