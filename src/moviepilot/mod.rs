//! PLACEHOLDER: replaced by the real client (branch wip/mp). Same public API.
#![allow(dead_code, unused_variables)]

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    V2,
    V3,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum MpError {
    #[error("{0}")]
    Permanent(String),
    #[error("{0}")]
    Transient(String),
    #[error("{0}")]
    Uncertain(String),
}

impl MpError {
    pub fn kind(&self) -> &'static str {
        match self {
            MpError::Permanent(_) => "permanent",
            MpError::Transient(_) => "transient",
            MpError::Uncertain(_) => "uncertain",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MediaKind {
    Movie,
    Tv,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MediaItem {
    pub title: String,
    pub year: Option<String>,
    pub kind: MediaKind,
    pub tmdb_id: Option<u64>,
    pub season_numbers: Vec<u32>,
    pub overview: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subscription {
    pub id: u64,
    pub name: String,
    pub year: Option<String>,
    pub kind: Option<MediaKind>,
    pub tmdb_id: Option<u64>,
    pub season: Option<u32>,
    pub state: Option<String>,
    pub lack_episode: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Download {
    pub title: String,
    pub progress: Option<f64>,
    pub state: Option<String>,
    pub season_episode: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewSubscription {
    pub name: String,
    pub year: Option<String>,
    pub kind: MediaKind,
    pub tmdb_id: u64,
    pub season: Option<u32>,
}

#[derive(Clone)]
pub struct MoviePilot;

impl MoviePilot {
    pub fn dialect(&self) -> Dialect {
        Dialect::V2
    }
    pub async fn search_media(&self, title: &str) -> Result<Vec<MediaItem>, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn media_detail(
        &self,
        tmdb_id: u64,
        kind: MediaKind,
    ) -> Result<Option<MediaItem>, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn find_subscription(
        &self,
        tmdb_id: u64,
        season: Option<u32>,
    ) -> Result<Option<Subscription>, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn create_subscription(&self, item: &NewSubscription) -> Result<u64, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn list_subscriptions(&self) -> Result<Vec<Subscription>, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn delete_subscription(&self, id: u64) -> Result<(), MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn search_subscription_now(&self, id: u64) -> Result<(), MpError> {
        Err(MpError::Permanent("stub".into()))
    }
    pub async fn downloading(&self) -> Result<Vec<Download>, MpError> {
        Err(MpError::Permanent("stub".into()))
    }
}
