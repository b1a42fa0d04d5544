//! The DCGM thread and the sampler's handle on it ([`Client`]).
//!
//! One thread loads the library and owns the DCGM handle; every DCGM call runs there. Each tick
//! the sampler sends what it wants ([`Wanted`]) and waits at most the deadline for the answer
//! ([`Outcome`]). A call that hangs (a hostengine that stopped answering) holds only that
//! thread: the tick goes on without DCGM values, and while the call has not returned no new
//! request is sent. A lost hostengine is reconnected with backoff. Each change of state
//! (DCGM down, DCGM back) and each field DCGM refuses is logged once, here; the state itself
//! (connecting, up, down, since when, the last error) is kept in a `state::StateBook` for the
//! surfaces ([`Client::status`]).
//!
//! It must not read NVML, encode or serve.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use super::address::HostengineAddress;
use super::library::{self, Api, LibraryError};
use super::options::{DcgmOptions, Mode};
use super::session::SessionError;
use super::session::{self, GpuGroups, Session};
use super::state::StateBook;
use super::switches::SwitchReading;
use super::wanted::{Target, Wanted};
use crate::base::backoff::Backoff;
use crate::snapshot::{DcgmState, DcgmStatus, HealthWatch};

/// Reconnecting waits 1 s, 2 s, 4 s, … up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

const LIB_PENDING: u8 = 0;
const LIB_LOADED: u8 = 1;
const LIB_FAILED: u8 = 2;

/// Why the DCGM thread gave no answer, or DCGM cannot be used: what a tick records as the
/// reason DCGM is down (in the state the surfaces show) and `check` reports.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    /// The library cannot be loaded (said once, when it was tried).
    #[error(transparent)]
    Library(Arc<LibraryError>),
    /// The library loaded but `dcgmInit` failed.
    #[error(transparent)]
    Init(SessionError),
    /// An earlier request is still in a DCGM call.
    #[error("a DCGM call has not returned for {secs:.1} s (a hostengine that stopped answering?)")]
    Stuck {
        /// How long it has been in the call.
        secs: f64,
    },
    /// The DCGM thread has a request it has not taken yet.
    #[error("the DCGM thread is busy")]
    Busy,
    /// The DCGM thread is gone.
    #[error("the DCGM thread has ended")]
    Ended,
    /// No answer within the deadline.
    #[error("DCGM did not answer within the {ms} ms deadline")]
    Deadline {
        /// The deadline, in milliseconds.
        ms: u128,
    },
    /// There is no session, and no connection failed yet.
    #[error("not connected")]
    NotConnected,
    /// The remote hostengine did not answer the connection.
    #[error("the hostengine at {addr} does not answer: {source}")]
    Remote {
        /// The hostengine's address, as given.
        addr: HostengineAddress,
        /// The failed connect call.
        source: SessionError,
    },
    /// The embedded hostengine did not start.
    #[error("the embedded hostengine did not start: {0}")]
    Embedded(#[source] SessionError),
}

/// What one tick got from DCGM.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// DCGM answered this tick.
    pub up: bool,
    /// Values by (entity, field id), in DCGM's units.
    pub values: HashMap<(Target, u16), f64>,
    /// Each GPU's health watches by UUID, when asked for and DCGM answered.
    pub health: HashMap<String, Vec<HealthWatch>>,
    /// Why DCGM gave nothing, when it did not answer.
    pub why: Option<String>,
    /// What DCGM gave of the NVSwitches and their ports, when their fields were asked for
    /// and DCGM answered (its `switches` is `None` otherwise); the fields it refused are
    /// moved out to the refused list.
    pub switch: SwitchReading,
}

/// What DCGM supports on this node, as `gpu-exporter check` reports it: the library, the
/// hostengine's answer and each GPU's profiling metric groups.
#[derive(Debug, Clone, Default)]
pub struct DcgmSupport {
    /// The library (place and version), or why it cannot be used.
    pub library: Option<Result<(String, String), ClientError>>,
    /// Whether the hostengine answered, or why not.
    pub connected: Option<Result<(), ClientError>>,
    /// Each GPU's profiling metric groups.
    pub gpus: Vec<GpuGroups>,
}

enum Request {
    Tick(u64, Wanted),
    Support(u64),
}

enum Answer {
    Tick(Box<Outcome>, Vec<(Target, u16, String)>),
    Support(DcgmSupport),
}

/// The sampler's handle on the DCGM thread.
pub struct Client {
    tx: SyncSender<Request>,
    rx: Receiver<(u64, Answer)>,
    seq: u64,
    /// A request not answered yet, and when it was sent.
    pending: Option<(u64, Instant)>,
    deadline: Duration,
    library: Arc<AtomicU8>,
    /// The DCGM thread is loading the library, connecting or making watches: slow calls
    /// that a late answer does not make a change of state.
    setup: Arc<AtomicBool>,
    /// DCGM's state over the ticks (connecting until the first answer).
    book: StateBook,
    /// The time of the tick being asked for (a late answer is taken in at the next tick).
    now_unix: f64,
    /// Fields DCGM refused, per entity, with the reason (logged once each).
    refused: BTreeMap<(Target, u16), String>,
    /// What was last logged about the switch fields: `Some(None)` served, `Some(Some(why))`
    /// not served and why; `None` before DCGM said anything of switches.
    switch_gap: Option<Option<String>>,
    /// What was last logged of `-s/--switch-devices` naming what DCGM does not list.
    switch_note: Option<String>,
    /// The switches and up ports last listed, in words (a change is logged).
    switch_listing: Option<String>,
    mode: Mode,
}

impl Client {
    /// Starts the DCGM thread (it loads the library at once).
    pub fn start(opts: DcgmOptions) -> std::io::Result<Self> {
        let (tx, req_rx) = sync_channel::<Request>(1);
        let (ans_tx, rx) = sync_channel::<(u64, Answer)>(4);
        let library = Arc::new(AtomicU8::new(LIB_PENDING));
        let lib_state = Arc::clone(&library);
        let setup = Arc::new(AtomicBool::new(false));
        let in_setup = Arc::clone(&setup);
        let deadline = opts.deadline;
        let mode = opts.mode.clone();
        std::thread::Builder::new()
            .name("dcgm".into())
            .spawn(move || run(opts, req_rx, ans_tx, lib_state, in_setup))?;
        Ok(Self {
            tx,
            rx,
            seq: 0,
            pending: None,
            deadline,
            library,
            setup,
            book: StateBook::default(),
            now_unix: 0.0,
            refused: BTreeMap::new(),
            switch_gap: None,
            switch_note: None,
            switch_listing: None,
            mode,
        })
    }

    /// Whether DCGM may serve fields: the library is loaded or still loading (a library that
    /// cannot be used leaves the fields to NVML's own verdict).
    pub fn may_serve(&self) -> bool {
        self.library.load(Ordering::Acquire) != LIB_FAILED
    }

    /// The mode it runs in.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// DCGM's state after the last tick, as the snapshot carries it (without the values it
    /// left unserved: the sampler knows those).
    pub fn status(&self) -> DcgmStatus {
        self.book.status(&self.mode)
    }

    /// Fields DCGM refused, per entity, with the reason.
    pub fn refused(&self) -> &BTreeMap<(Target, u16), String> {
        &self.refused
    }

    /// Sends `req` and waits at most `wait` for its answer.
    fn ask(
        &mut self,
        make: impl FnOnce(u64) -> Request,
        wait: Duration,
    ) -> Result<Answer, ClientError> {
        // Answers that came too late for their tick: their values are stale, their state is
        // not (a connection that failed after the deadline is still news).
        while let Ok((seq, a)) = self.rx.try_recv() {
            if self.pending.is_some_and(|(p, _)| p == seq) {
                self.pending = None;
            }
            self.absorb(a);
        }
        if let Some((_, since)) = self.pending {
            return Err(ClientError::Stuck {
                secs: since.elapsed().as_secs_f64(),
            });
        }
        self.seq += 1;
        let seq = self.seq;
        match self.tx.try_send(make(seq)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ClientError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(ClientError::Ended),
        }
        self.pending = Some((seq, Instant::now()));
        let end = Instant::now() + wait;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((s, a)) if s == seq => {
                    self.pending = None;
                    return Ok(a);
                }
                Ok((_, late)) => self.absorb(late),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ClientError::Deadline {
                        ms: wait.as_millis(),
                    });
                }
                Err(RecvTimeoutError::Disconnected) => return Err(ClientError::Ended),
            }
        }
    }

    /// This tick's DCGM values for `wanted`, waiting at most the deadline; `now_unix` is the
    /// tick's time, what the state's "since" is measured in.
    pub fn tick(&mut self, wanted: &Wanted, now_unix: f64) -> Outcome {
        self.now_unix = now_unix;
        let w = wanted.clone();
        let out = match self.ask(|s| Request::Tick(s, w), self.deadline) {
            Ok(Answer::Tick(out, refused)) => {
                if out.up {
                    self.note_refused(refused);
                    self.note_switches(&out);
                }
                self.note_state(&out);
                *out
            }
            Ok(Answer::Support(_)) => Outcome::default(),
            // Still loading, connecting or making watches: no values yet, and no change of
            // state to report (a hostengine that is away fails those calls, and says so).
            Err(why)
                if self.setup.load(Ordering::Acquire)
                    || self.library.load(Ordering::Acquire) == LIB_PENDING =>
            {
                let why = why.to_string();
                self.book.waiting(now_unix, why.clone());
                Outcome {
                    up: self.book.state() == DcgmState::Up,
                    why: Some(why),
                    ..Outcome::default()
                }
            }
            Err(why) => {
                let out = Outcome {
                    why: Some(why.to_string()),
                    ..Outcome::default()
                };
                self.note_state(&out);
                out
            }
        };
        if !out.up {
            self.book.failed_tick();
        }
        out
    }

    /// What DCGM supports, for `check`: waits at most `wait`.
    pub fn support(&mut self, wait: Duration) -> DcgmSupport {
        match self.ask(Request::Support, wait) {
            Ok(Answer::Support(r)) => r,
            Ok(Answer::Tick(..)) => DcgmSupport::default(),
            Err(why) => DcgmSupport {
                connected: Some(Err(why)),
                ..DcgmSupport::default()
            },
        }
    }

    /// Takes in the state of an answer that came after its tick.
    fn absorb(&mut self, late: Answer) {
        if let Answer::Tick(out, refused) = late {
            if out.up {
                self.note_refused(refused);
            }
            self.note_state(&out);
        }
    }

    /// Logs once each change of why the switch fields are not served (no switch listed, a
    /// listing or watch DCGM refused), and their return.
    fn note_switches(&mut self, out: &Outcome) {
        let Some(switches) = out.switch.switches.as_ref() else {
            return;
        };
        let gap = super::select::switches_not_served(Some(switches));
        if self.switch_gap.as_ref() != Some(&gap) {
            match &gap {
                Some(why) => info!("NVSwitch fields are not exported: {why}"),
                None => info!("NVSwitch fields are served by DCGM, one series per switch"),
            }
        }
        self.switch_gap = Some(gap);
        if out.switch.note != self.switch_note {
            if let Some(note) = &out.switch.note {
                warn!("{note}");
            }
            self.switch_note.clone_from(&out.switch.note);
        }
        if let Some(now) = &out.switch.listing {
            match &self.switch_listing {
                Some(was) if was != now => info!("DCGM now lists {now} (was {was})"),
                None => info!("DCGM lists {now}"),
                Some(_) => {}
            }
            self.switch_listing = Some(now.clone());
        }
    }

    fn note_refused(&mut self, refused: Vec<(Target, u16, String)>) {
        let mut now = BTreeMap::new();
        for (t, f, why) in refused {
            if !self.refused.contains_key(&(t.clone(), f)) {
                let name = crate::catalogue::by_id(u32::from(f)).map_or("a DCGM field", |d| d.name);
                let entity = match t.gi {
                    _ if t.is_switches() => "the NVSwitches".to_owned(),
                    Some(gi) => format!("GPU {} instance {gi}", t.uuid),
                    None => format!("GPU {}", t.uuid),
                };
                info!(
                    field = name,
                    "{name} is not available from DCGM on {entity}: {why}; it will not be \
                     exported for it"
                );
            }
            now.insert((t, f), why);
        }
        self.refused = now;
    }

    fn note_state(&mut self, out: &Outcome) {
        let was = self.book.state();
        self.book.answer(self.now_unix, out.up, out.why.clone());
        // A library that cannot be used was said once by the DCGM thread.
        if self.library.load(Ordering::Acquire) == LIB_FAILED {
            return;
        }
        let mode = self.mode.name();
        match (was, out.up) {
            (DcgmState::Connecting | DcgmState::Down | DcgmState::Off, true) => info!(
                mode,
                "DCGM answers: profiling fields on GPUs without GPM are served by DCGM; \
                 gpu_exporter_dcgm_up is 1"
            ),
            (DcgmState::Connecting | DcgmState::Up | DcgmState::Off, false) => warn!(
                mode,
                "DCGM is unavailable: {}; DCGM-served series are left out and \
                 gpu_exporter_dcgm_up is 0 until it answers again (NVML series go on)",
                out.why.as_deref().unwrap_or("no answer")
            ),
            _ => {}
        }
    }
}

/// The DCGM thread's state.
struct Worker {
    /// Set while connecting or making watches (see [`Client`]).
    setup: Arc<AtomicBool>,
    opts: DcgmOptions,
    /// The loaded library, or why it cannot be used.
    api: Result<&'static Api, ClientError>,
    session: Option<Session>,
    backoff: Backoff,
    next_attempt: Instant,
    last_connect_error: Option<ClientError>,
}

fn run(
    opts: DcgmOptions,
    rx: Receiver<Request>,
    tx: SyncSender<(u64, Answer)>,
    lib_state: Arc<AtomicU8>,
    setup: Arc<AtomicBool>,
) {
    let api = match library::load(opts.lib.as_deref()) {
        Ok(api) => {
            info!(library = %api.place, version = %api.version, mode = opts.mode.name(), "DCGM library loaded");
            match session::init(api) {
                Ok(()) => {
                    lib_state.store(LIB_LOADED, Ordering::Release);
                    Ok(api)
                }
                Err(e) => {
                    error!(
                        "DCGM cannot be initialised: {e}; profiling fields on GPUs without GPM are not exported"
                    );
                    lib_state.store(LIB_FAILED, Ordering::Release);
                    Err(ClientError::Init(e))
                }
            }
        }
        Err(e) => {
            match &e {
                LibraryError::NotFound { .. } => warn!("{e}"),
                _ => error!("{e}"),
            }
            lib_state.store(LIB_FAILED, Ordering::Release);
            Err(ClientError::Library(Arc::new(e)))
        }
    };
    let mut w = Worker {
        setup,
        api,
        session: None,
        backoff: Backoff::new(Duration::from_secs(1), MAX_BACKOFF),
        next_attempt: Instant::now(),
        last_connect_error: None,
        opts,
    };
    while let Ok(req) = rx.recv() {
        let (seq, answer) = match req {
            Request::Tick(seq, wanted) => (seq, w.tick(&wanted)),
            Request::Support(seq) => (seq, Answer::Support(w.support())),
        };
        if tx.send((seq, answer)).is_err() {
            break;
        }
    }
    if let Some(s) = w.session.take() {
        s.close();
    }
}

impl Worker {
    fn down(why: String) -> Answer {
        Answer::Tick(
            Box::new(Outcome {
                why: Some(why),
                ..Outcome::default()
            }),
            Vec::new(),
        )
    }

    /// Connects when there is no session and the backoff allows it.
    fn ensure_session(&mut self, api: &'static Api) -> Result<(), ClientError> {
        if self.session.is_some() {
            return Ok(());
        }
        if Instant::now() < self.next_attempt {
            return Err(self
                .last_connect_error
                .clone()
                .unwrap_or(ClientError::NotConnected));
        }
        let timeout = self.opts.deadline;
        let opened = Session::open(
            api,
            &self.opts.mode,
            timeout,
            &self.opts.switches,
            self.opts.log_severity,
        );
        match opened {
            Ok(s) => {
                self.session = Some(s);
                self.backoff.reset();
                self.last_connect_error = None;
                Ok(())
            }
            Err(e) => {
                let what = match &self.opts.mode {
                    Mode::Remote(a) => ClientError::Remote {
                        addr: a.clone(),
                        source: e,
                    },
                    _ => ClientError::Embedded(e),
                };
                self.next_attempt = Instant::now() + self.backoff.next_delay();
                self.last_connect_error = Some(what.clone());
                Err(what)
            }
        }
    }

    fn tick(&mut self, wanted: &Wanted) -> Answer {
        let api = match &self.api {
            Ok(api) => *api,
            Err(why) => return Self::down(why.to_string()),
        };
        let fresh = self
            .session
            .as_ref()
            .is_none_or(|s| !s.watches_match(wanted));
        self.setup.store(fresh, Ordering::Release);
        let answer = self.read(api, wanted);
        self.setup.store(false, Ordering::Release);
        answer
    }

    /// Connects if needed, then reads `wanted` (making the watches when they changed).
    fn read(&mut self, api: &'static Api, wanted: &Wanted) -> Answer {
        if let Err(why) = self.ensure_session(api) {
            return Self::down(why.to_string());
        }
        let Some(s) = self.session.as_mut() else {
            return Self::down(ClientError::NotConnected.to_string());
        };
        let read = s
            .read(wanted, self.opts.max_keep_age, self.opts.max_keep_samples)
            .and_then(|r| {
                let health = if wanted.health {
                    s.health()?
                } else {
                    HashMap::new()
                };
                Ok((r, health))
            });
        match read {
            Ok((mut r, health)) => {
                let mut refused = r.refused;
                // A switch field DCGM refused is listed under an empty target.
                refused.extend(
                    std::mem::take(&mut r.switch.refused)
                        .into_iter()
                        .map(|(f, why)| (Target::switches(), f, why)),
                );
                Answer::Tick(
                    Box::new(Outcome {
                        up: true,
                        values: r.values,
                        health,
                        why: None,
                        switch: r.switch,
                    }),
                    refused,
                )
            }
            Err(e) if e.lost() => {
                if let Some(s) = self.session.take() {
                    s.abandon();
                }
                self.next_attempt = Instant::now() + self.backoff.next_delay();
                Self::down(format!("the connection was lost: {e}"))
            }
            Err(e) => Answer::Tick(
                Box::new(Outcome {
                    up: true,
                    why: Some(e.to_string()),
                    ..Outcome::default()
                }),
                Vec::new(),
            ),
        }
    }

    fn support(&mut self) -> DcgmSupport {
        let api = match &self.api {
            Ok(api) => *api,
            Err(why) => {
                return DcgmSupport {
                    library: Some(Err(why.clone())),
                    ..DcgmSupport::default()
                };
            }
        };
        let mut r = DcgmSupport {
            library: Some(Ok((api.place.clone(), api.version.clone()))),
            ..DcgmSupport::default()
        };
        self.next_attempt = Instant::now();
        match self.ensure_session(api) {
            Ok(()) => {
                r.connected = Some(Ok(()));
                r.gpus = self
                    .session
                    .as_ref()
                    .map(Session::metric_groups)
                    .unwrap_or_default();
            }
            Err(why) => r.connected = Some(Err(why)),
        }
        r
    }
}
