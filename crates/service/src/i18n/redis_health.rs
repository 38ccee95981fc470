//! The admin chats' notices that Redis, oncebot's ledger, refuses writes and that it takes them
//! again (`redis_health`). Written for whoever runs the household's server: what is wrong, what
//! still works, what to do, and that nothing is lost.

use super::{Render, duration_en, duration_zh};
use crate::ledger::WriteRefusal;

impl Render {
    /// Sent once when Redis starts refusing writes.
    pub fn writes_refused_notice(&self, refusal: WriteRefusal) -> String {
        let zh = self.zh();
        let (cause, fix) = match refusal {
            WriteRefusal::OutOfMemory => (
                zh_en!(
                    zh,
                    "Redis（oncebot 的数据库）的内存已满，拒绝写入。",
                    "Redis (oncebot's database) is full and refuses writes."
                ),
                zh_en!(
                    zh,
                    "请为 Redis 腾出内存：删除不需要的数据，或调大它的内存上限（maxmemory）。",
                    "Free memory in Redis: delete data nobody needs, or raise its memory limit (maxmemory)."
                ),
            ),
            WriteRefusal::LastSaveFailed => (
                zh_en!(
                    zh,
                    "Redis（oncebot 的数据库）没能把数据保存到磁盘，因此拒绝写入。",
                    "Redis (oncebot's database) could not save its data to disk, so it refuses writes."
                ),
                zh_en!(
                    zh,
                    "请检查 Redis 的磁盘：是否已满，数据目录是否还在、是否可写。Redis 再次保存成功后即恢复写入。",
                    "Check Redis's disk: is it full, is its data directory still there and writable? Once it saves again, it takes writes again."
                ),
            ),
        };
        zh_en!(
            self.zh(),
            ("⚠️ {cause}\n在此期间：新消息暂不处理（Telegram 会稍后重发），已完成的任务结果暂存在内存里等待记录。\n{fix}\n不会丢失任何东西，恢复后一切自动继续。"),
            ("⚠️ {cause}\nMeanwhile new messages wait (Telegram sends them again later) and finished jobs keep their results until they can be recorded.\n{fix}\nNothing is lost: everything goes on by itself once it is fixed.")
        )
    }

    /// Sent once when Redis takes writes again, with how long it refused them.
    pub fn writes_accepted_notice(&self, lasted: std::time::Duration) -> String {
        let lasted = std::time::Duration::from_secs(lasted.as_secs().max(1));
        zh_en!(
            self.zh(),
            (
                "✅ Redis 已恢复写入（中断了约 {}）。积压的消息和任务正在继续处理，没有丢失。",
                duration_zh(lasted)
            ),
            (
                "✅ Redis takes writes again (after about {}). The waiting messages and jobs are going on; nothing was lost.",
                duration_en(lasted)
            )
        )
    }
}
