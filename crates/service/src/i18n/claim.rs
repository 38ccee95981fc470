//! `/claim <code>`'s answers (bot_claim.lua queues the one that applies). None says the code.

use super::Texts;

impl Texts {
    /// The answers of `/claim`, as bot_claim.lua reads them (JSON).
    pub fn claim_texts(&self) -> String {
        let zh = self.zh();
        serde_json::json!({
            "claimed": zh_en!(
                zh,
                "认领成功：你现在是这个机器人的管理员。发送 /help 查看命令，/users 查看可以使用机器人的人。",
                "Claimed: you are now this bot's admin. Send /help for the commands, /users for who may use the bot."
            ),
            "already": zh_en!(
                zh,
                "这个机器人已经有管理员了，无需认领。",
                "This bot has an admin already; there is nothing to claim."
            ),
            "wrong": zh_en!(
                zh,
                "认领码不对。请核对服务器日志中的认领码后再试。",
                "That is not the claim code. Check the code in the server's log and try again."
            ),
            "none": zh_en!(
                zh,
                "现在没有等待使用的认领码。",
                "No claim code is waiting now."
            ),
            "too_many": zh_en!(
                zh,
                "尝试次数太多，请一小时后再试。",
                "Too many tries; try again in an hour."
            ),
        })
        .to_string()
    }
}
