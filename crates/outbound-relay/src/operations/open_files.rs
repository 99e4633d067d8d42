//! `max_connections` against the process's open-files limit (`RLIMIT_NOFILE`): every client
//! connection is a descriptor, beside the listener, the spools' files and the webhooks' and
//! forwards' own connections ([`RESERVE`]). With the soft limit under that, the relay ran out
//! of descriptors before reaching `max_connections`: accepts failed every 50 ms, deliveries
//! could not connect, and `/readyz` blamed the spool. So at start the soft limit is raised to
//! what `max_connections` needs (at most to the hard limit), and a hard limit below it is a
//! config error that says so.

/// Descriptors kept for everything but client connections: the listener, the spools' files,
/// the outbound connections to webhooks and forwards, the runtime's own.
pub const RESERVE: u64 = 1024;

/// What [`fit`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Fitted {
    /// The soft limit was enough.
    Already(u64),
    /// The soft limit was raised from `.0` to `.1`.
    Raised(u64, u64),
}

/// Whether [`fit`] would succeed, changing nothing (`outbound-relay check`).
pub fn would_fit(max_connections: usize) -> Result<(), String> {
    limit_for(max_connections).map(|_| ())
}

/// Raises the soft open-files limit to what `max_connections` needs, when it is lower; the
/// error is the reason the relay cannot start (for `max_connections`).
pub fn fit(max_connections: usize) -> Result<Fitted, String> {
    let (soft, limit) = match limit_for(max_connections)? {
        Need::Enough(soft) => return Ok(Fitted::Already(soft)),
        Need::Raise(soft, limit) => (soft, limit),
    };
    let needed = limit.rlim_cur;
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(format!(
            "{max_connections} connections need {needed} open files, over the soft limit of \
             {soft}, which could not be raised: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(Fitted::Raised(soft, needed))
}

/// What the limit is and what it must become.
enum Need {
    Enough(u64),
    /// The soft limit now, and the limit to set.
    Raise(u64, libc::rlimit),
}

fn limit_for(max_connections: usize) -> Result<Need, String> {
    let needed = max_connections as u64 + RESERVE;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!(
            "cannot read the open-files limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    let (soft, hard): (u64, u64) = (limit.rlim_cur, limit.rlim_max);
    if soft >= needed {
        return Ok(Need::Enough(soft));
    }
    if hard < needed {
        return Err(format!(
            "{max_connections} connections need {needed} open files ({RESERVE} more for the \
             spools and outbound connections), over this process's hard limit of {hard} \
             (ulimit -Hn): lower max_connections to {} or raise the limit",
            hard.saturating_sub(RESERVE)
        ));
    }
    limit.rlim_cur = needed;
    Ok(Need::Raise(soft, limit))
}
