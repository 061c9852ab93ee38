/// How stepd and stepctl end, from sysexits.h, so that scripts and systemd can tell the causes apart.
/// docs/configuration.md ("Exit status") and the man pages' EXIT STATUS list the same table.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    /// Done; the daemon: stopped by SIGTERM or SIGINT.
    case success = 0
    /// stepctl: the daemon answered with an ERROR (of any code but `not_permitted`).
    case failure = 1
    /// EX_USAGE: a bad command line.
    case usage = 64
    /// EX_DATAERR: a recording or input file whose content is invalid (not gzip, bad rows, no samples).
    case dataError = 65
    /// EX_NOINPUT: a named file missing, unreadable or not a regular file (a recording, the --config file, the MQTT files).
    case noInput = 66
    /// EX_UNAVAILABLE: stepctl: no daemon to talk to, or it closed the connection.
    case unavailable = 69
    /// EX_SOFTWARE: an internal error.
    case software = 70
    /// EX_CANTCREAT: the daemon cannot create its socket or state directory.
    case cantCreate = 73
    /// EX_IOERR: stepctl: standard output cannot be written (not a reader that closed it: that ends with 0).
    case ioError = 74
    /// EX_TEMPFAIL: another stepd already serves that socket or holds that state directory.
    case tempFail = 75
    /// EX_NOPERM: permission refused (stepctl reset by a non-admin: the ERROR code `not_permitted`).
    case noPermission = 77
    /// EX_CONFIG: a bad stepd.conf.
    case config = 78
}
