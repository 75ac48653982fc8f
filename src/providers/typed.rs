//! Streams whose events are named by type (Anthropic Messages, OpenAI Responses): each
//! event is read by its type, until the event that ends the stream (its last event, or
//! an error event), after which nothing more is read.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{SseEvent, StreamDecoder, WireError, lenient, parse_event};
use crate::model::TurnDelta;

/// What an event did to the stream.
#[derive(Debug)]
pub(crate) enum Flow {
    /// More events may follow.
    More,
    /// The stream is over: later events are skipped.
    End,
    /// The provider reported an error: the stream is over.
    Failed(WireError),
}

/// What reading an event did: the stream's [`Flow`], or the error that the event is
/// not what its type says (the stream goes on after it).
pub(crate) type Step = Result<Flow, WireError>;

/// A provider's decoder of typed events.
pub(crate) trait TypedDecoder: Send {
    /// The event types the decoder reads (an enum with an `#[serde(other)]` variant).
    type Kind: DeserializeOwned;

    /// Reads one event of type `kind` (`None`: the event names no type, or one `Kind`
    /// cannot take); appends the deltas it decides.
    fn read(&mut self, kind: Option<Self::Kind>, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Step;
}

/// A [`TypedDecoder`] as a [`StreamDecoder`]: the event's type read, and nothing read
/// after the stream's end.
#[derive(Debug)]
pub(crate) struct TypedEvents<D> {
    decoder: D,
    done: bool,
}

impl<D> TypedEvents<D> {
    pub(crate) fn new(decoder: D) -> Self {
        TypedEvents { decoder, done: false }
    }
}

impl<D: TypedDecoder> StreamDecoder for TypedEvents<D> {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        match self.decoder.read(event_kind(event)?, event, deltas)? {
            Flow::More => Ok(()),
            Flow::End => {
                self.done = true;
                Ok(())
            }
            Flow::Failed(error) => {
                self.done = true;
                Err(error)
            }
        }
    }

    /// Calls the stream never finished stay open in the turn; the parser reports them at
    /// its own end.
    fn finish(&mut self, _deltas: &mut Vec<TurnDelta>) {
        self.done = true;
    }
}

/// An event's type: its `event:` name, else its payload's `type` (`None` when neither
/// names a type `K` knows).
fn event_kind<K: DeserializeOwned>(event: &SseEvent) -> Result<Option<K>, WireError> {
    match event.event.as_deref() {
        Some(name) => Ok(lenient::variant(name)),
        None => Ok(parse_event::<TypeField<K>>(event)?.kind),
    }
}

/// A payload's `type`, for events sent without an `event:` name.
#[derive(Deserialize)]
#[serde(default, bound = "K: DeserializeOwned")]
struct TypeField<K> {
    #[serde(rename = "type", deserialize_with = "lenient::tag")]
    kind: Option<K>,
}

impl<K> Default for TypeField<K> {
    fn default() -> Self {
        TypeField { kind: None }
    }
}
