//! The variant worker (ractor): uploads return as soon as the original is stored, and the
//! worker makes the variants of each PROCESSING image, one image at a time so a burst of
//! uploads cannot take every core. When it starts it takes up the images a stopped process
//! left PROCESSING.

use super::render::{self, Rendered};
use domain::clock::Clock;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::sync::Arc;
use storage::Database;
use storage::media::files::{self, MediaFile, StoredVariant};
use storage::media::objects::Objects;

/// What the worker is told.
pub enum VariantMsg {
    /// Make the variants of this file.
    Process(Box<MediaFile>),
}

/// What the worker needs.
pub struct VariantArgs {
    /// The pool.
    pub db: Database,
    /// Where the bytes are.
    pub objects: Objects,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

/// The variant worker.
pub struct VariantWorker;

impl Actor for VariantWorker {
    type Msg = VariantMsg;
    type State = VariantArgs;
    type Arguments = VariantArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<VariantMsg>,
        args: VariantArgs,
    ) -> Result<VariantArgs, ActorProcessingErr> {
        match files::processing(&args.db).await {
            Ok(waiting) => {
                for file in waiting {
                    myself.send_message(VariantMsg::Process(Box::new(file)))?;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read files waiting for variants"),
        }
        Ok(args)
    }

    async fn handle(
        &self,
        _myself: ActorRef<VariantMsg>,
        message: VariantMsg,
        state: &mut VariantArgs,
    ) -> Result<(), ActorProcessingErr> {
        let VariantMsg::Process(file) = message;
        let started = std::time::Instant::now();
        match process(state, &file).await {
            Ok(count) => tracing::info!(
                file = %file.id,
                variants = count,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "variants ready"
            ),
            Err(e) => tracing::warn!(file = %file.id, error = %e, "variants failed"),
        }
        Ok(())
    }
}

/// The key of a variant next to its original (`…/<id>.jpg` → `…/<id>/thumbnail.jpg`).
pub fn variant_key(original: &str, rendered: &Rendered) -> String {
    let base = original
        .rsplit_once('.')
        .map(|(b, _)| b)
        .unwrap_or(original);
    let ext = if rendered.content_type == "image/png" {
        "png"
    } else {
        "jpg"
    };
    format!(
        "{base}/{}.{ext}",
        rendered.variant.as_str().to_ascii_lowercase()
    )
}

async fn process(state: &VariantArgs, file: &MediaFile) -> Result<usize, String> {
    let Some(original) = state
        .objects
        .get(&file.storage_key)
        .await
        .map_err(|e| e.to_string())?
    else {
        // Deleted meanwhile: nothing to make.
        return Ok(0);
    };
    let rendered = tokio::task::spawn_blocking(move || render::variants(&original))
        .await
        .map_err(|e| e.to_string())?;
    let rendered = match rendered {
        Ok(rendered) => rendered,
        Err(e) => {
            // The original stays usable; the record says why it has no variants.
            files::ready(
                &state.db,
                file,
                &[],
                Some(&e.to_string()),
                state.clock.now(),
            )
            .await
            .map_err(|e| e.to_string())?;
            return Err(e.to_string());
        }
    };
    let mut stored = Vec::with_capacity(rendered.len());
    for r in rendered {
        let key = variant_key(&file.storage_key, &r);
        let size = r.bytes.len() as i64;
        state
            .objects
            .put(&key, r.bytes, r.content_type)
            .await
            .map_err(|e| e.to_string())?;
        stored.push(StoredVariant {
            variant: r.variant,
            storage_key: key,
            content_type: r.content_type.to_string(),
            width: r.width as i32,
            height: r.height as i32,
            size_bytes: size,
        });
    }
    files::ready(&state.db, file, &stored, None, state.clock.now())
        .await
        .map_err(|e| e.to_string())?;
    Ok(stored.len())
}

/// The handle the upload endpoint gives files to.
#[derive(Clone)]
pub struct MediaWorkers {
    worker: ActorRef<VariantMsg>,
}

impl MediaWorkers {
    /// Starts the worker (and takes up what was left PROCESSING).
    pub async fn start(args: VariantArgs) -> Result<MediaWorkers, ractor::SpawnErr> {
        let (worker, _) = Actor::spawn(None, VariantWorker, args).await?;
        Ok(MediaWorkers { worker })
    }

    /// Queues a file for its variants.
    pub fn submit(&self, file: MediaFile) {
        if self
            .worker
            .send_message(VariantMsg::Process(Box::new(file)))
            .is_err()
        {
            tracing::error!(
                "variant worker is not running; the file stays PROCESSING until restart"
            );
        }
    }

    /// Stops the worker.
    pub fn stop(&self) {
        self.worker.stop(None);
    }
}
