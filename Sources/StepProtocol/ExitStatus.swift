/// Exit statuses of stepd and stepctl, from sysexits.h, so that scripts and systemd can tell failures apart.
public enum ExitStatus: Int32, Sendable {
    case success = 0
    /// stepctl: the daemon answered with an ERROR (other than a refused permission).
    case failure = 1
    case usage = 64
    case dataError = 65
    case noInput = 66
    /// stepctl: no daemon to talk to, or it closed the connection.
    case unavailable = 69
    case software = 70
    case cantCreate = 73
    case tempFail = 75
    /// Permission refused (stepctl reset by a non-admin).
    case noPermission = 77
    case config = 78
}
