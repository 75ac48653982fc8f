//! Streams whose events are named by type (Anthropic Messages, OpenAI Responses): each
//! event is read by its type, until the event that ends the stream (its last event, or
//! an error event), after which nothing more is read. An event of a type the decoder
//! does not know (`ping`, types added later) is skipped, but must still be JSON.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use super::{SseEvent, StreamDecoder, WireError, lenient, parse_event, parse_event_any};
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

/// A provider's decoder of the event types `K` (an enum of the types it reads).
pub(crate) trait TypedDecoder<K>: Send {
    /// Reads one event of type `kind`; appends the deltas it decides.
    fn read(&mut self, kind: K, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Step;
}

/// A [`TypedDecoder`] as a [`StreamDecoder`]: the event's type read, events of other
/// types skipped, and nothing read after the stream's end.
#[derive(Debug)]
pub(crate) struct TypedEvents<D, K> {
    decoder: D,
    done: bool,
    kinds: PhantomData<fn() -> K>,
}

impl<D, K> TypedEvents<D, K> {
    pub(crate) fn new(decoder: D) -> Self {
        TypedEvents { decoder, done: false, kinds: PhantomData }
    }
}

impl<K: DeserializeOwned, D: TypedDecoder<K>> StreamDecoder for TypedEvents<D, K> {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        let Some(kind) = event_kind(event)? else {
            parse_event_any::<IgnoredAny>(event)?;
            return Ok(());
        };
        match self.decoder.read(kind, event, deltas)? {
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
