//! The extraction worker's memory limits: the parent's watch of the child's resident
//! memory (the rule, the same everywhere), and the OS's hard caps (`RLIMIT_AS` on Unix, a
//! Job Object on Windows).

#[cfg(unix)]
pub fn limit_address_space(mib: u64) {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let bytes = mib.saturating_mul(1024 * 1024);
    let limit = Rlimit {
        current: Some(bytes),
        maximum: Some(bytes),
    };
    if let Err(e) = setrlimit(Resource::As, limit) {
        tracing::warn!(error = %e, "the extraction worker could not limit its memory");
    }
}

#[cfg(not(unix))]
pub fn limit_address_space(_mib: u64) {}

/// The resident memory of process `pid` in bytes, where the platform tells it (`None`
/// where it does not, or when the process is gone).
#[cfg(target_os = "linux")]
pub fn resident_bytes(pid: u32) -> Option<u64> {
    // `VmRSS:    123456 kB` in /proc/PID/status (a few hundred bytes; read bounded).
    use std::io::Read;
    let mut status = String::new();
    std::fs::File::open(format!("/proc/{pid}/status"))
        .ok()?
        .take(16 * 1024)
        .read_to_string(&mut status)
        .ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// macOS: `proc_pidinfo(PROC_PIDTASKINFO)`, the task's resident size. Not compiled on
/// these machines.
#[cfg(target_os = "macos")]
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let pid = libc::c_int::try_from(pid).ok()?;
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_taskinfo>()).ok()?;
    // SAFETY: `info` is a plain C struct of integers, valid when zeroed; the call writes at
    // most `size` bytes into it and returns how many it wrote.
    let mut info: libc::proc_taskinfo = unsafe { std::mem::zeroed() };
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTASKINFO,
            0,
            (&mut info as *mut libc::proc_taskinfo).cast(),
            size,
        )
    };
    (written == size).then_some(info.pti_resident_size)
}

/// Elsewhere the OS cap alone holds (Windows: the Job Object).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub fn resident_bytes(_pid: u32) -> Option<u64> {
    None
}

/// Windows: a Job Object that caps the worker's committed memory and kills it when the
/// handle closes (with the [`Running`] that owns it, or with Hearth). Not compiled on these
/// machines.
#[cfg(windows)]
pub mod job {
    use std::os::windows::io::AsRawHandle;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOB_OBJECT_LIMIT_PROCESS_MEMORY, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JobObjectExtendedLimitInformation, SetInformationJobObject,
    };

    pub struct Job(HANDLE);

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: the handle came from `CreateJobObjectW` and is closed once, here.
            unsafe { CloseHandle(self.0) };
        }
    }

    /// Puts `child` in a new job whose processes may commit at most `mib` MiB.
    pub fn confine(child: &std::process::Child, mib: u64) -> std::io::Result<Job> {
        // SAFETY: no attributes and no name: a new anonymous job, or null on failure.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if handle.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        let job = Job(handle);
        // SAFETY: a plain C struct of integers, valid when zeroed.
        let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        info.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        info.ProcessMemoryLimit =
            usize::try_from(mib.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
        // SAFETY: `info` lives across the call and its size is passed with it.
        let ok = unsafe {
            SetInformationJobObject(
                job.0,
                JobObjectExtendedLimitInformation,
                (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the child's process handle is valid while `child` is borrowed.
        let ok = unsafe { AssignProcessToJobObject(job.0, child.as_raw_handle() as HANDLE) };
        if ok == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }
}

/// Whether a child using `resident` bytes is over a limit of `limit_mib` MiB (an unknown
/// use is not: the OS cap holds there).
pub fn over_limit(resident: Option<u64>, limit_mib: u64) -> bool {
    resident.is_some_and(|bytes| bytes > limit_mib.saturating_mul(1024 * 1024))
}

#[cfg(test)]
mod memory_tests {
    use super::{over_limit, resident_bytes};

    #[test]
    fn a_child_over_the_limit_is_over_and_an_unknown_use_is_left_to_the_os_cap() {
        let mib = 1024 * 1024;
        assert!(!over_limit(Some(256 * mib), 256));
        assert!(over_limit(Some(256 * mib + 1), 256));
        assert!(!over_limit(None, 256));
        assert!(!over_limit(Some(u64::MAX), u64::MAX));
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn resident_memory_is_read_and_grows_with_touched_pages() {
        let pid = std::process::id();
        let before = resident_bytes(pid).expect("this process's memory");
        let block = std::hint::black_box(vec![1u8; 64 * 1024 * 1024]);
        let after = resident_bytes(pid).expect("this process's memory");
        assert!(
            after >= before + 32 * 1024 * 1024,
            "{before} → {after} after touching 64 MiB"
        );
        drop(block);
        assert_eq!(resident_bytes(u32::MAX), None, "no such process");
    }
}
