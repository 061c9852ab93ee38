import ArgumentParser
import StepService

/// `stepd run`'s flags made from their one declaration in `ConfigOption.all`: the flag's name, help, value
/// name, default and allowed range all come from it, so `@Option(.named("speed")) var speed: Double` is
/// the whole of a flag. The value is parsed with the same kind and range as stepd.conf, so both refuse the
/// same values with the same words. OptionDeclarationTests fails when a flag of `stepd run` has no
/// declaration, or a declaration no flag.

/// A Swift type a declared option's value converts to.
protocol DeclaredValue: Sendable {
    init?(_ value: ConfigValue)
}

extension Double: DeclaredValue {
    init?(_ value: ConfigValue) {
        switch value {
        case .number(let x): self = x
        case .integer(let n): self = Double(n)
        default: return nil
        }
    }
}

extension Int: DeclaredValue {
    init?(_ value: ConfigValue) {
        guard case .integer(let n) = value else { return nil }
        self = n
    }
}

extension String: DeclaredValue {
    init?(_ value: ConfigValue) {
        guard case .string(let s) = value else { return nil }
        self = s
    }
}

extension ConfigOption {
    /// The help `stepd --help` shows. ArgumentParser adds "(default: x)" for a flag with a fixed default;
    /// one that is nil until given says its default in words.
    func argumentHelp(sayingDefault: Bool) -> ArgumentHelp {
        let text = sayingDefault ? "\(help) (default: \(defaultText.trimmingCharacters(in: ["(", ")"])))" : help
        return ArgumentHelp(text, valueName: valueName)
    }

    /// Parses a command-line value for a flag of type `T`, with the option's kind and range.
    func transform<T: DeclaredValue>(_ type: T.Type) -> @Sendable (String) throws -> T {
        let option = self
        return { text in
            let value: ConfigValue
            do { value = try option.value(text) } catch { throw ValidationError("\(error)") }
            guard let typed = T(value) else { throw ValidationError("expected \(option.kind.expectation), found \"\(text)\"") }
            return typed
        }
    }

    /// The typed default; a declaration whose default does not parse is a programming error found at once.
    func typedDefault<T: DeclaredValue>(_ type: T.Type) -> T {
        guard let value = defaultValue, let typed = T(value) else {
            preconditionFailure("option \(key): default \"\(defaultText)\" is not a \(T.self)")
        }
        return typed
    }
}

extension Option where Value: DeclaredValue {
    /// A flag with a value and a fixed default.
    init(_ option: ConfigOption) {
        self.init(wrappedValue: option.typedDefault(Value.self), name: .customLong(option.flagName),
                  help: option.argumentHelp(sayingDefault: true), transform: option.transform(Value.self))
    }
}

extension Option {
    /// A flag with a value whose default is absent or worked out at run time (nil until given).
    init<T: DeclaredValue>(_ option: ConfigOption) where Value == T? {
        self.init(wrappedValue: nil, name: .customLong(option.flagName), help: option.argumentHelp(sayingDefault: true),
                  transform: option.transform(T.self))
    }
}

extension Flag where Value == Bool {
    /// A flag without a value: given means true.
    init(_ option: ConfigOption) {
        self.init(wrappedValue: false, name: .customLong(option.flagName), help: ArgumentHelp(option.help))
    }
}
