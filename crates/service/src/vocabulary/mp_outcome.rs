//! What a job found or did at MoviePilot, in the job's `mp_outcome` field: the record an operator
//! (and a verification after a crash) reads to tell a job that created something from one that
//! found it there already. This is the only spelling of its values.

/// A job's outcome at MoviePilot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpOutcome {
    /// A subscription was made.
    Created,
    /// The subscription existed before this job.
    AlreadyExisted,
    /// A download was added.
    Added,
    /// After a crash or a lost answer, what the job was to make was found made.
    VerifiedExisting,
    /// The library has the media: nothing was asked of the sites or created.
    InLibrary,
    /// `/best` found a plain subscription of the media and left it as it is.
    PlainExists,
    /// A subscription was deleted,
    Deleted,
    /// or was gone already,
    AlreadyGone,
    /// or was found gone after a crash or a lost answer.
    VerifiedDeleted,
    /// A house command's scheduler job: MoviePilot answered (it ran),
    Finished,
    /// the start went out and no answer came in time (under way),
    Started,
    /// or MoviePilot's scheduler listed it running (nothing sent).
    AlreadyRunning,
    /// `/restart`: MoviePilot was seen gone and back,
    Restarted,
    /// kept answering after it accepted the restart,
    NotRestarted,
    /// did not come back within the watch,
    NotBack,
    /// or cannot be told (a crash, then MoviePilot answering throughout).
    Unknown,
    /// `/redo`: the record was filed again.
    Redone,
}

impl MpOutcome {
    /// The job field that stores it.
    pub const FIELD: &'static str = "mp_outcome";

    pub fn as_str(self) -> &'static str {
        match self {
            MpOutcome::Created => "created",
            MpOutcome::AlreadyExisted => "already_existed",
            MpOutcome::Added => "added",
            MpOutcome::VerifiedExisting => "verified_existing",
            MpOutcome::InLibrary => "in_library",
            MpOutcome::PlainExists => "plain_exists",
            MpOutcome::Deleted => "deleted",
            MpOutcome::AlreadyGone => "already_gone",
            MpOutcome::VerifiedDeleted => "verified_deleted",
            MpOutcome::Finished => "finished",
            MpOutcome::Started => "started",
            MpOutcome::AlreadyRunning => "already_running",
            MpOutcome::Restarted => "restarted",
            MpOutcome::NotRestarted => "not_restarted",
            MpOutcome::NotBack => "not_back",
            MpOutcome::Unknown => "unknown",
            MpOutcome::Redone => "redone",
        }
    }

    /// `(mp_outcome, <value>)`, a job field as a run returns it.
    pub fn field(self) -> (String, String) {
        (Self::FIELD.to_string(), self.as_str().to_string())
    }
}

impl std::fmt::Display for MpOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}
