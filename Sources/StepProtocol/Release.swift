/// stepd's release: the one place it is written. `--version` of stepd, stepctl and stepd-web prints it, and the
/// daemon sends it in VERSION and STATUS (`release`) and in Home Assistant's device entry.
public let stepdRelease = "0.1.0"
