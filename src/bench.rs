//! `oncebot bench`: figures for the real pipeline on a private Redis.

/// Options of `oncebot bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// A short run (under a minute).
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Use this Redis instead of starting a private one (its data is not touched outside a
    /// fresh key prefix).
    #[arg(long)]
    pub redis_url: Option<String>,
}

pub async fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
