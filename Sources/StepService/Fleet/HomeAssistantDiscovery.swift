import Foundation
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
    let topics: FleetTopics
    /// Only what exists is declared: no floors sensor without a barometer, no tracker with GPS off.
    var hasBarometer = true
    var hasGPS = true
    var discoveryPrefix = Self.defaultPrefix
    var release = stepdRelease

    /// Object id, name, STEPS field, unit, Home Assistant device and state classes, icon.
    private static let sensors: [(object: String, name: String, field: String, unit: String?, deviceClass: String?,
                                  stateClass: String?, icon: String)] = [
        ("steps", "Steps", "steps", "steps", nil, "total_increasing", "mdi:walk"),
        // Since local midnight: total_increasing, so the fall to 0 at midnight is a new cycle to HA's statistics.
        ("steps_today", "Steps today", "today.steps", "steps", nil, "total_increasing", "mdi:walk"),
        ("distance", "Distance", "distance_m", "m", "distance", "total_increasing", "mdi:map-marker-distance"),
        ("cadence", "Cadence", "current_cadence_spm", "steps/min", nil, "measurement", "mdi:metronome"),
        ("activity", "Activity", "activity", nil, nil, nil, "mdi:run"),
        ("floors", "Floors climbed", "floors_ascended", "floors", nil, "total_increasing", "mdi:stairs-up"),
    ]

    private var node: String { "stepd_\(deviceID)" }

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
                "object_id": "\(node)_\(sensor.object)",
                "state_topic": topics.steps,
                // A STEPS without floors (no barometer) leaves the sensor as it was rather than "unknown". A nested
                // field is tested by its object: Jinja fails on a field of an undefined one.
                "value_template": "{{ value_json.\(sensor.field) if value_json.\(sensor.field.prefix { $0 != "." }) is defined else this.state }}",
                "availability_topic": topics.status,
                "payload_available": FleetPayloads.online,
                "payload_not_available": FleetPayloads.offline,
                "icon": sensor.icon,
                "device": device,
            ]
            if let unit = sensor.unit { config["unit_of_measurement"] = unit }
            if let deviceClass = sensor.deviceClass { config["device_class"] = deviceClass }
            if let stateClass = sensor.stateClass { config["state_class"] = stateClass }
            messages.append((topic, Self.encode(config)))
        }
        let trackerTopic = "\(discoveryPrefix)/device_tracker/\(node)/position/config"
        guard hasGPS else { return messages + [(trackerTopic, "")] }
        // A GPS device_tracker takes its place from the attributes latitude, longitude and gps_accuracy.
        let tracker: [String: Any] = [
            "name": "Position",
            "unique_id": "\(node)_position",
            "object_id": "\(node)_position",
            "source_type": "gps",
            "json_attributes_topic": topics.position,
            "json_attributes_template":
                "{{ {'latitude': value_json.lat, 'longitude': value_json.lon, 'gps_accuracy': value_json.eph_m | default(0)} | tojson }}",
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
