/// Exit statuses of stepd and stepctl, from sysexits.h, one table for both (docs/service.md).
public enum ExitStatus: Int32 {
    case success = 0
    case failure = 1
    case usage = 64
    case dataError = 65
    case noInput = 66
    case unavailable = 69
    case software = 70
    case cantCreate = 73
    case tempFail = 75
    case noPermission = 77
    case config = 78
}
