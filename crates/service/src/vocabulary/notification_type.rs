//! MoviePilot's notification types (`NotificationType` in its `app/schemas/types.py`): the value
//! its message history stores in `mtype`, and the enum name its Webhook plugin and its settings
//! use. `notify.routes` accepts either spelling.

/// One of MoviePilot's notification types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NotificationType {
    Download,
    Organize,
    Subscribe,
    SiteMessage,
    MediaServer,
    Manual,
    Plugin,
    Other,
}

impl NotificationType {
    pub const ALL: [NotificationType; 8] = [
        NotificationType::Download,
        NotificationType::Organize,
        NotificationType::Subscribe,
        NotificationType::SiteMessage,
        NotificationType::MediaServer,
        NotificationType::Manual,
        NotificationType::Plugin,
        NotificationType::Other,
    ];

    /// The value MoviePilot stores in a history row's `mtype` (and the enum's `_value_`).
    pub fn value(self) -> &'static str {
        match self {
            NotificationType::Download => "资源下载",
            NotificationType::Organize => "整理入库",
            NotificationType::Subscribe => "订阅",
            NotificationType::SiteMessage => "站点",
            NotificationType::MediaServer => "媒体服务器",
            NotificationType::Manual => "手动处理",
            NotificationType::Plugin => "插件",
            NotificationType::Other => "其它",
        }
    }

    /// The enum member's name (`_name_`).
    pub fn name(self) -> &'static str {
        match self {
            NotificationType::Download => "Download",
            NotificationType::Organize => "Organize",
            NotificationType::Subscribe => "Subscribe",
            NotificationType::SiteMessage => "SiteMessage",
            NotificationType::MediaServer => "MediaServer",
            NotificationType::Manual => "Manual",
            NotificationType::Plugin => "Plugin",
            NotificationType::Other => "Other",
        }
    }

    /// Either spelling (the name case-insensitively), surrounding blanks ignored.
    pub fn parse(text: &str) -> Option<NotificationType> {
        let text = text.trim();
        NotificationType::ALL
            .into_iter()
            .find(|t| t.value() == text || t.name().eq_ignore_ascii_case(text))
    }

    /// The type of a history row by its `mtype`; a row without one (a plain message) is
    /// `Other`, as MoviePilot files untyped messages.
    pub fn of_row(mtype: Option<&str>) -> Option<NotificationType> {
        match mtype.map(str::trim) {
            None | Some("") => Some(NotificationType::Other),
            Some(m) => NotificationType::parse(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse() {
        for t in NotificationType::ALL {
            assert_eq!(NotificationType::parse(t.value()), Some(t));
            assert_eq!(NotificationType::parse(t.name()), Some(t));
            assert_eq!(NotificationType::parse(&t.name().to_lowercase()), Some(t));
        }
        assert_eq!(NotificationType::parse("下载"), None);
        assert_eq!(
            NotificationType::of_row(None),
            Some(NotificationType::Other)
        );
    }
}
