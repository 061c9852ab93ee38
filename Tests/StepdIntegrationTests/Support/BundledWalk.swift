import Foundation

/// The bundled walk's lines as text, header first: line n of the file is `lines[n - 1]`.
func bundledWalkLines() throws -> [String] {
    try runCommand("/bin/sh", ["-c", "gzip -dc '\(Binaries.bundledRecording)'"]).stdout.split(separator: "\n").map(String.init)
}

/// The bundled walk written again as `name` in `directory`, under `header`, each row made by `row` from its
/// t, x, y, z (m/s²): the walk in g, with date-times, with another header. Returns the file's path.
func rewrittenBundledWalk(_ name: String, in directory: TemporaryDirectory, header: String = "t,x,y,z",
                          _ row: (Double, Double, Double, Double) -> String) throws -> String {
    let lines = try bundledWalkLines().dropFirst().map { line -> String in
        let v = line.split(separator: ",").map { Double(String($0))! }
        return row(v[0], v[1], v[2], v[3])
    }
    let path = directory.file(name)
    try ([header] + lines).joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
}
