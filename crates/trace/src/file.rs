//! Trace files chosen by extension, and a sink that can be handed to the simulator while the
//! caller keeps a handle to finish it.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::rc::Rc;

use sim::trace::{TraceEvent, TraceSink};
use thiserror::Error;

use crate::perfetto::PerfettoWriter;
use crate::text::{FtraceTextWriter, TraceHeader};

/// The output formats, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// `.txt`: ftrace text.
    FtraceText,
    /// `.pftrace`: Perfetto protobuf.
    Perfetto,
}

#[derive(Debug, Error)]
#[error("{path}: unknown trace format: use a .txt (ftrace text) or .pftrace (Perfetto) file name")]
pub struct UnknownFormat {
    pub path: String,
}

impl TraceFormat {
    pub fn from_path(path: &Path) -> Result<TraceFormat, UnknownFormat> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("txt") => Ok(TraceFormat::FtraceText),
            Some("pftrace") => Ok(TraceFormat::Perfetto),
            _ => Err(UnknownFormat { path: path.display().to_string() }),
        }
    }
}

/// A trace being written to a file.
pub enum TraceFile {
    Text(FtraceTextWriter<BufWriter<File>>),
    Perfetto(PerfettoWriter<BufWriter<File>>),
}

impl TraceFile {
    /// Creates `path` (format from its extension) and writes the header.
    pub fn create(path: &Path, format: TraceFormat, header: &TraceHeader) -> io::Result<TraceFile> {
        let out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        Ok(match format {
            TraceFormat::FtraceText => TraceFile::Text(FtraceTextWriter::new(out, header)?),
            TraceFormat::Perfetto => TraceFile::Perfetto(PerfettoWriter::new(out, header)?),
        })
    }

    /// Flushes; returns the first error met while writing.
    pub fn finish(self) -> io::Result<()> {
        match self {
            TraceFile::Text(w) => w.finish().map(drop),
            TraceFile::Perfetto(w) => w.finish().map(drop),
        }
    }
}

impl TraceSink for TraceFile {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        match self {
            TraceFile::Text(w) => w.event(ts_ns, cpu, ev),
            TraceFile::Perfetto(w) => w.event(ts_ns, cpu, ev),
        }
    }
}

/// A sink shared between the simulator (which owns a `Box<dyn TraceSink>`) and the caller,
/// who gets the writer back with [`SharedSink::into_inner`] once the run is over.
pub struct SharedSink<T>(Rc<RefCell<T>>);

impl<T: TraceSink + 'static> SharedSink<T> {
    /// The handle to keep, and the sink to give to `Sim::run_traced`.
    pub fn new(inner: T) -> (SharedSink<T>, Box<dyn TraceSink>) {
        let rc = Rc::new(RefCell::new(inner));
        (SharedSink(rc.clone()), Box::new(SharedSink(rc)))
    }

    /// The writer, once every other handle (the simulator's sink) is dropped.
    pub fn into_inner(self) -> Option<T> {
        Rc::try_unwrap(self.0).ok().map(RefCell::into_inner)
    }
}

impl<T: TraceSink> TraceSink for SharedSink<T> {
    fn event(&mut self, ts_ns: u64, cpu: u32, ev: &TraceEvent<'_>) {
        self.0.borrow_mut().event(ts_ns, cpu, ev);
    }
}
