import Foundation
import StepProcessing
import StepProtocol

/// Home Assistant's MQTT discovery (https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery): one
/// retained config message per entity under `homeassistant/<component>/<node>/<object>/config` makes the
/// sensors and the tracker appear, grouped as one device, with no YAML. The states come from the daemon's
/// own retained topics (`steps`, `position`) through value templates, and `status` is their availability.
struct HomeAssistantDiscovery {
    static let defaultPrefix = "homeassistant"

    let deviceID: String
    /// The device's name in Home Assistant (the host name); the id stays the key (identifiers, unique ids).
    var deviceName: String
    /// What the entity ids start with (`FleetConfiguration.entityName`): `sensor.pinephone_3f9a12c4_steps`.
    var entityName: String
    let topics: FleetTopics
    /// Only what exists is declared: no floors sensor without a barometer, no tracker with GPS off.
    var hasBarometer = true
    var hasGPS = true
    var discoveryPrefix = Self.defaultPrefix
    var release = stepdRelease

    /// Object id, name, STEPS field, unit, Home Assistant device and state classes, display precision, icon.
    /// A `total_increasing` value falls only at a reset (`steps`, `distance`, `floors`: since the reset; the
    /// distance is each step's own stride added up, so a stride calibrated by GPS never lowers it) or at midnight
    /// (`steps_today`), which Home Assistant's statistics take as a new cycle.
    private static let sensors: [(object: String, name: String, field: String, unit: String?, deviceClass: String?,
                                  stateClass: String?, precision: Int?, icon: String)] = [
        ("steps", "Steps", "steps", "steps", nil, "total_increasing", nil, "mdi:walk"),
        ("steps_today", "Steps today", "today.steps", "steps", nil, "total_increasing", nil, "mdi:walk"),
        ("distance", "Distance", "distance_m", "m", "distance", "total_increasing", 0, "mdi:map-marker-distance"),
        ("cadence", "Cadence", "current_cadence_spm", "steps/min", nil, "measurement", 0, "mdi:metronome"),
        ("activity", "Activity", "activity", nil, "enum", nil, nil, "mdi:run"),
        ("floors", "Floors climbed", "floors_ascended", "floors", nil, "total_increasing", nil, "mdi:stairs-up"),
    ]

    /// The discovery topics' node id: the device id, which never changes (a renamed host keeps its entities).
    private var node: String { "stepd_\(deviceID)" }
    /// Entity ids are the object id: the short name, as Home Assistant writes it (lower case, `_` for `-`).
    private var objectPrefix: String { entityName.lowercased().replacingOccurrences(of: "-", with: "_") }

    /// A numeric sensor's value template: the field when the message has it, else an empty string, which
    /// Home Assistant's MQTT sensor ignores for a numeric sensor (the state stays as it was). Never `this.state`:
    /// an entity without a state yet (Home Assistant just started) or unavailable would get "unknown" or
    /// "unavailable", which a total_increasing sensor refuses as non-numeric.
    static func numericTemplate(field: String) -> String {
        let parts = field.split(separator: ".")
        let tests = (1...parts.count).map { "value_json.\(parts.prefix($0).joined(separator: ".")) is defined" }
        return "{{ value_json.\(field) if value_json is mapping and \(tests.joined(separator: " and ")) else '' }}"
    }

    private var device: [String: Any] {
        ["identifiers": [node], "name": deviceName, "manufacturer": "stepd", "model": "stepd",
         "sw_version": release]
    }

    /// Every config message: (topic, JSON payload), all to be published retained. An entity that does not exist
    /// gets an empty payload, which removes one an earlier run declared (Home Assistant's way to delete it).
    var messages: [(topic: String, payload: String)] {
        var messages: [(String, String)] = []
        for sensor in Self.sensors {
            let topic = "\(discoveryPrefix)/sensor/\(node)/\(sensor.object)/config"
            if sensor.object == "floors" && !hasBarometer {
                messages.append((topic, ""))
                continue
            }
            var config: [String: Any] = [
                "name": sensor.name,
                "unique_id": "\(node)_\(sensor.object)",
                "object_id": "\(objectPrefix)_\(sensor.object)",
                "state_topic": topics.steps,
                "availability_topic": topics.status,
                "payload_available": FleetPayloads.online,
                "payload_not_available": FleetPayloads.offline,
                "icon": sensor.icon,
                "device": device,
            ]
            if sensor.deviceClass == "enum" {
                // Every STEPS has `activity`; the options are all it can be (Home Assistant 2024.9 and later
                // check the state against them, earlier releases ignore them).
                config["value_template"] = "{{ value_json.\(sensor.field) }}"
                config["options"] = ActivityTracker.State.allCases.map(\.rawValue)
            } else {
                config["value_template"] = Self.numericTemplate(field: sensor.field)
            }
            if let unit = sensor.unit { config["unit_of_measurement"] = unit }
            if let deviceClass = sensor.deviceClass { config["device_class"] = deviceClass }
            if let stateClass = sensor.stateClass { config["state_class"] = stateClass }
            if let precision = sensor.precision { config["suggested_display_precision"] = precision }
            messages.append((topic, Self.encode(config)))
        }
        let trackerTopic = "\(discoveryPrefix)/device_tracker/\(node)/position/config"
        guard hasGPS else { return messages + [(trackerTopic, "")] }
        // A GPS device_tracker takes its place from the attributes latitude, longitude and gps_accuracy (metres).
        // gpsd's eph is that accuracy; without it there is none, rather than 0, which would read as exact.
        let place = "'latitude': value_json.lat, 'longitude': value_json.lon"
        let tracker: [String: Any] = [
            "name": "Position",
            "unique_id": "\(node)_position",
            "object_id": "\(objectPrefix)_position",
            "source_type": "gps",
            "json_attributes_topic": topics.position,
            "json_attributes_template":
                "{% if value_json.eph_m is defined and value_json.eph_m is not none %}{{ {\(place), 'gps_accuracy': value_json.eph_m} | tojson }}"
                + "{% else %}{{ {\(place)} | tojson }}{% endif %}",
            "availability_topic": topics.status,
            "payload_available": FleetPayloads.online,
            "payload_not_available": FleetPayloads.offline,
            "device": device,
        ]
        messages.append((trackerTopic, Self.encode(tracker)))
        return messages
    }

    private static func encode(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
