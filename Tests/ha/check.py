"""Home Assistant's own code judges a capture of what stepd published (scripts/test-ha makes the capture and runs
this with the Python of its venv, where homeassistant is installed).

    python check.py CAPTURE.json

The capture is every MQTT message seen by a subscriber, in order, as mosquitto_sub -F %j prints them, and the
events the capture script noted. What is checked, each with Home Assistant's code:
- every discovery config through its platform's DISCOVERY_SCHEMA, after the abbreviations and `~` are expanded
  as HA's discovery does; a key the schema drops is reported (`options` of an enum sensor is kept from HA 2024.9
  on and dropped before, so it is only noted);
- every state message through the value_template of each sensor reading its topic, rendered by MqttValueTemplate
  on a real HomeAssistant object (with `this`, the entity's state in hass.states, as HA gives it), the result
  applied as the MQTT sensor applies it (an empty string ignored, "None" unknown), and read back through
  SensorEntity.state, which raises for a non-numeric value of a numeric sensor or an enum value outside the
  options; HA's warnings (a unit or state class that does not fit the device class) are problems too;
- the same for an entity that has no state yet: a Home Assistant started afresh, seeing the retained message;
- the tracker's json_attributes_template: a JSON object with latitude and longitude, gps_accuracy only with eph_m;
- every total_increasing sensor: its value never falls except at a reset (`since` changes) or, for one read
  from `today`, at midnight (`today.since` changes). HA's statistics take a fall of under 10 % for a dip and
  subtract it, a larger one for a new cycle (the total counted again);
- every declared entity gets a state, and the retained steps after each clean stop carry the count saved.
Prints what it found; exits 1 on a problem.
"""
import asyncio
import json
import logging
import re
import sys
import tempfile

import voluptuous as vol
from homeassistant.components.mqtt import device_tracker as mqtt_device_tracker
from homeassistant.components.mqtt import sensor as mqtt_sensor
from homeassistant.components.mqtt.abbreviations import ABBREVIATIONS, DEVICE_ABBREVIATIONS
from homeassistant.components.mqtt.models import MqttValueTemplate, PayloadSentinel
from homeassistant.components.sensor import SensorEntity
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.util import slugify

SCHEMAS = {"sensor": mqtt_sensor.DISCOVERY_SCHEMA, "device_tracker": mqtt_device_tracker.DISCOVERY_SCHEMA}
# Keys HA 2024.3's schema drops but later releases use (MQTT sensor options, core PR 123248, 2024.9).
LATER_KEYS = {"options"}


class Problems(logging.Handler):
    """Collects the problems, and HA's own warnings and errors."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.found = {}     # text -> [where first, how many times]
        self.context = ""

    def emit(self, record):
        self.add("Home Assistant logged %s: %s" % (record.levelname, record.getMessage()))

    def add(self, text):
        if text in self.found:
            self.found[text][1] += 1
        else:
            self.found[text] = [self.context, 1]

    def lines(self):
        return ["%s%s%s" % (text, " [first at %s]" % where if where else "", " (%d times)" % count if count > 1 else "")
                for text, (where, count) in self.found.items()]


class Probe(SensorEntity):
    """A sensor as MqttSensor is one: what its discovery config says, the value its last message set."""

    _attr_should_poll = False

    def __init__(self, hass, entity_id, config):
        self.hass = hass
        self.entity_id = entity_id
        self._attr_name = config.get("name")
        self._attr_device_class = config.get("device_class")
        self._attr_state_class = config.get("state_class")
        self._attr_native_unit_of_measurement = config.get("unit_of_measurement")
        self._attr_suggested_display_precision = config.get("suggested_display_precision")
        # HA 2024.3 drops `options` from an MQTT sensor; later releases check the state against them, as here.
        self._attr_options = config.get("options")
        self._attr_native_value = None


def expand(payload):
    """The discovery payload as HA's discovery hands it to the platform: abbreviations and ~ expanded."""
    config = {ABBREVIATIONS.get(k, k): v for k, v in payload.items()}
    if isinstance(config.get("device"), dict):
        config["device"] = {DEVICE_ABBREVIATIONS.get(k, k): v for k, v in config["device"].items()}
    if "~" in config:
        base = config.pop("~")
        for key, value in list(config.items()):
            if key.endswith("topic") and isinstance(value, str) and value:
                if value[0] == "~":
                    config[key] = base + value[1:]
                if value[-1] == "~":
                    config[key] = value[:-1] + base
    return config


def field_of(template):
    """The STEPS field a value template reads, for the reports ("value_json.today.steps" -> "today.steps")."""
    found = re.search(r"value_json\.([A-Za-z_.]+)", template or "")
    return found.group(1).rstrip(".") if found else "?"


def lookup(payload, path):
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


class Entity:
    def __init__(self, hass, component, topic, config):
        self.component = component
        self.topic = topic
        self.config = config
        self.entity_id = "%s.%s" % (component, slugify(config.get("object_id") or config.get("name") or "mqtt"))
        self.probe = Probe(hass, self.entity_id, config) if component == "sensor" else None
        template = config.get("value_template") or config.get("json_attributes_template")
        if template is not None:
            template.hass = hass
        self.render = MqttValueTemplate(template, entity=self.probe if self.probe else None, hass=hass)
        self.states = 0
        self.last = None          # (value, payload) of the last accepted numeric value
        self.field = field_of(template.template if template else None)


async def check(capture):
    problems = Problems()
    logging.getLogger("homeassistant").addHandler(problems)
    logging.getLogger("homeassistant").setLevel(logging.WARNING)
    hass = HomeAssistant(tempfile.mkdtemp(prefix="stepd-ha-"))
    prefix = capture["prefix"]
    entities = {}          # discovery topic -> Entity
    declared = set()
    availability = {}
    falls = []
    positions = {"with eph_m": 0, "without eph_m": 0}
    print("Home Assistant %s, %d messages under %s" % (HA_VERSION, len(capture["messages"]), prefix))

    def render(entity, payload, fresh):
        """One message through one sensor as MqttSensor._update_state takes it; the state HA would show."""
        probe = entity.probe
        if fresh:
            # A Home Assistant started afresh: the entity has no state and no value yet.
            probe = Probe(hass, entity.entity_id + "_fresh", entity.config)
            renderer = MqttValueTemplate(entity.config.get("value_template"), entity=probe, hass=hass)
        else:
            renderer = entity.render
        result = renderer.async_render_with_possible_json_value(payload, PayloadSentinel.DEFAULT)
        if result is PayloadSentinel.DEFAULT:
            return "ignored (template error)", None
        text = str(result)
        if probe._numeric_state_expected:
            if text == "":
                return "ignored (empty)", None
            probe._attr_native_value = None if text == "None" else text
        else:
            probe._attr_native_value = text
        try:
            state = probe.state
        except ValueError as error:
            problems.add("%s: %s" % ("a fresh HA" if fresh else entity.entity_id, error))
            return "error", None
        if not fresh:
            hass.states.async_set(entity.entity_id, state if state is not None else "unknown")
        return "state", state

    for index, message in enumerate(capture["messages"]):
        topic, payload = message["topic"], message.get("payload") or ""
        problems.context = "message %d, %s" % (index, topic)
        if topic.startswith("homeassistant/") and topic.endswith("/config"):
            component = topic.split("/")[1]
            if not payload:
                entities.pop(topic, None)
                continue
            try:
                config = SCHEMAS[component](expand(json.loads(payload)))
            except (vol.Invalid, KeyError, ValueError) as error:
                problems.add("discovery config %s refused: %s" % (topic, error))
                continue
            raw = json.loads(payload)
            dropped = set(expand(raw)) - set(config) - LATER_KEYS
            if dropped:
                problems.add("discovery config %s: HA drops %s" % (topic, sorted(dropped)))
            config = dict(config)
            if "options" in raw:
                config["options"] = raw["options"]
            if topic not in entities or entities[topic].config != config:
                entities[topic] = Entity(hass, component, topic, config)
            declared.add(topic)
            continue
        if topic == prefix + "/status":
            availability[topic] = payload
            for entity in entities.values():
                if entity.config.get("availability_topic") == topic and entity.probe:
                    if payload == entity.config.get("payload_not_available", "offline"):
                        hass.states.async_set(entity.entity_id, "unavailable")
                    else:
                        value = entity.probe._attr_native_value
                        hass.states.async_set(entity.entity_id, "unknown" if value is None else str(value))
            continue
        try:
            body = json.loads(payload) if payload else None
        except ValueError:
            body = None
        for entity in list(entities.values()):
            if entity.component == "sensor" and entity.config.get("state_topic") == topic:
                for fresh in (False, True):
                    outcome, state = render(entity, payload, fresh)
                    if fresh or outcome != "state":
                        continue
                    entity.states += 1
                    if entity.config.get("state_class") != "total_increasing" or state is None:
                        continue
                    value = float(state)
                    if entity.last is not None and value < entity.last[0]:
                        before = entity.last[1]
                        key = "today.since" if entity.field.startswith("today.") else "since"
                        if lookup(before, key) == lookup(body, key):
                            share = (entity.last[0] - value) / entity.last[0] if entity.last[0] else 1
                            what = "a dip HA's statistics subtract" if share < 0.1 else "a new cycle: HA counts the total again"
                            falls.append("%s (%s) fell from %s to %s (%.1f %%) with the same %s: %s"
                                         % (entity.entity_id, entity.field, entity.last[0], value, share * 100, key, what))
                    entity.last = (value, body)
            elif entity.component == "device_tracker" and entity.config.get("json_attributes_topic") == topic:
                rendered = entity.render.async_render_with_possible_json_value(payload)
                try:
                    attributes = json.loads(rendered)
                except ValueError:
                    problems.add("%s: attributes are not JSON: %r" % (entity.entity_id, rendered))
                    continue
                if not isinstance(attributes, dict):
                    problems.add("%s: attributes are not an object: %r" % (entity.entity_id, rendered))
                    continue
                for key in ("latitude", "longitude"):
                    if not isinstance(attributes.get(key), (int, float)):
                        problems.add("%s: no numeric %s in %r" % (entity.entity_id, key, rendered))
                has_eph = isinstance(body, dict) and body.get("eph_m") is not None
                positions["with eph_m" if has_eph else "without eph_m"] += 1
                if has_eph != ("gps_accuracy" in attributes):
                    problems.add("%s: gps_accuracy %s while eph_m is %s" % (
                        entity.entity_id, attributes.get("gps_accuracy", "absent"), "there" if has_eph else "absent"))
                elif has_eph and attributes["gps_accuracy"] != body["eph_m"]:
                    problems.add("%s: gps_accuracy %r is not eph_m %r" % (entity.entity_id, attributes["gps_accuracy"], body["eph_m"]))
                entity.states += 1
    problems.context = ""

    print("entities:")
    for entity in sorted(entities.values(), key=lambda e: e.entity_id):
        c = entity.config
        print("  %-44s %-26s %s states; %s" % (entity.entity_id, entity.field, entity.states, ", ".join(
            "%s=%s" % (k, c[k]) for k in ("device_class", "state_class", "unit_of_measurement",
                                          "suggested_display_precision", "options") if c.get(k) is not None)))
        if entity.states == 0:
            problems.add("%s never got a state" % entity.entity_id)
        if re.search(r"[0-9a-f]{32}", entity.entity_id):
            problems.add("%s: the entity id carries the whole device id" % entity.entity_id)
    print("positions: %d with eph_m, %d without" % (positions["with eph_m"], positions["without eph_m"]))
    for fall in falls:
        problems.add("a total fell: " + fall)
    for event in capture["events"]:
        if event["event"] != "stopped":
            print("event: %s" % json.dumps(event))
            continue
        line, retained = event.get("stopped_line") or "", event.get("retained_steps") or {}
        saved = re.search(r"stopped; (\d+) steps", line)
        print("clean stop: exit %s; %s; retained steps %s" % (event["exit"], line, retained.get("steps")))
        if not saved or int(saved.group(1)) != retained.get("steps"):
            problems.add("after a clean stop the retained steps are %s but the daemon saved %s" % (
                retained.get("steps"), saved.group(1) if saved else "nothing"))
    await hass.async_stop(force=True)
    if problems.found:
        print("%d problems:" % len(problems.found))
        for line in problems.lines():
            print("  " + line)
        return 1
    print("no problem")
    return 0


def main():
    with open(sys.argv[1]) as f:
        capture = json.load(f)
    return asyncio.run(check(capture))


if __name__ == "__main__":
    sys.exit(main())
