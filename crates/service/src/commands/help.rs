//! `/help` and `/start`: answered at admission with the help for the asker's role (the ingress
//! queues it; no job), so neither has a run.

use super::{Spec, args};
use crate::i18n;

pub(super) const HELP: Spec = Spec {
    name: "help",
    about: &i18n::HELP,
    check: Some(args::none),
    run: None,
    house: None,
};

pub(super) const START: Spec = Spec {
    name: "start",
    about: &i18n::START,
    check: Some(args::none),
    run: None,
    house: None,
};
