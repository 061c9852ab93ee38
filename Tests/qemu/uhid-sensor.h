/*
 * uhid-sensor: what uhid-accel and uhid-press share, the device side of a HID sensor-hub sensor made through
 * /dev/uhid: create and destroy, the feature report the driver reads and writes (reporting state, power state,
 * report interval, sensitivity), its GET_REPORT/SET_REPORT requests, and the event loop that reads line
 * commands on stdin and sends the reports that are due. Each program adds its report descriptor, its input
 * report and its own commands. Test tool, not product code; every state change is one line on stdout.
 */
#ifndef UHID_SENSOR_H
#define UHID_SENSOR_H

#include <linux/uhid.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* HID Usage Tables, Sensors page (0x20), as used by drivers/iio/common/hid-sensors and include/linux/hid-sensor-ids.h. */
#define REPORT_ID 1
/* Values of the two selector fields as the kernel writes them: index of the usage in the selector list plus
 * the logical minimum, which hid-sensor-attributes forces to 1; the descriptors declare minimum 1 to agree. */
#define POWER_D0_FULL 2   /* HID_USAGE_SENSOR_PROP_POWER_STATE_D0_FULL_POWER_ENUM, second selector */
#define POWER_D4_OFF 6    /* ..._D4_POWER_OFF_ENUM, sixth selector */
#define REPORTING_ALL 2   /* HID_USAGE_SENSOR_PROP_REPORTING_STATE_ALL_EVENTS_ENUM, second selector */
#define REPORTING_NONE 1  /* ..._NO_EVENTS_ENUM, first selector */

/* The start of both report descriptors, after their Usage Page (Sensors), Usage (the sensor) and Collection
 * (Physical): the report id and the feature fields 0 to 2 that struct feature_state holds; each descriptor
 * then declares its field 3 (change sensitivity) and its input report. */
#define SENSOR_FEATURE_FIELDS \
	0x85, REPORT_ID,        /*   Report ID */ \
	/* Feature report, field 0: reporting state (named array) */ \
	0x0A, 0x16, 0x03,       /*   Usage (Property: Reporting State) */ \
	0x15, 0x01, 0x25, 0x06, /*   Logical Minimum (1), Logical Maximum (6) */ \
	0x75, 0x08, 0x95, 0x01, /*   Report Size (8), Report Count (1) */ \
	0xA1, 0x02,             /*   Collection (Logical) */ \
	0x0A, 0x40, 0x08,       /*     No Events */ \
	0x0A, 0x41, 0x08,       /*     All Events */ \
	0x0A, 0x42, 0x08,       /*     Threshold Events */ \
	0x0A, 0x43, 0x08,       /*     No Events Wake */ \
	0x0A, 0x44, 0x08,       /*     All Events Wake */ \
	0x0A, 0x45, 0x08,       /*     Threshold Events Wake */ \
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */ \
	0xC0,                   /*   End Collection */ \
	/* Feature report, field 1: power state (named array) */ \
	0x0A, 0x19, 0x03,       /*   Usage (Property: Power State) */ \
	0x15, 0x01, 0x25, 0x06, \
	0x75, 0x08, 0x95, 0x01, \
	0xA1, 0x02,             /*   Collection (Logical) */ \
	0x0A, 0x50, 0x08,       /*     Undefined */ \
	0x0A, 0x51, 0x08,       /*     D0 Full Power */ \
	0x0A, 0x52, 0x08,       /*     D1 Low Power */ \
	0x0A, 0x53, 0x08,       /*     D2 Standby with Wake */ \
	0x0A, 0x54, 0x08,       /*     D3 Sleep with Wake */ \
	0x0A, 0x55, 0x08,       /*     D4 Power Off */ \
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */ \
	0xC0,                   /*   End Collection */ \
	/* Feature report, field 2: report interval in ms (no unit item: the driver's default unit) */ \
	0x0A, 0x0E, 0x03,       /*   Usage (Property: Report Interval) */ \
	0x15, 0x00, 0x27, 0xFF, 0xFF, 0xFF, 0x7F, \
	0x75, 0x20, 0x95, 0x01, 0x55, 0x00, \
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */ \
	/* end of SENSOR_FEATURE_FIELDS */

/* The feature report, fields in the order the descriptors declare them. */
struct feature_state {
	uint8_t reporting_state;
	uint8_t power_state;
	uint32_t interval_ms;
	uint16_t sensitivity;
};

struct uhid_sensor {
	const char *program;          /* for messages: "uhid-accel" */
	const char *name;             /* the HID device's name */
	uint16_t product;             /* pid.codes test product id (vendor 0x1209, the open-source vendor id) */
	const uint8_t *descriptor;
	size_t descriptor_size;
	uint32_t initial_interval_ms; /* the report interval until the driver sets one */
	/* The input report with what the device holds now; returns its size. */
	size_t (*encode_input)(uint8_t *buf);
	/* Sends the reports that are due; returns seconds until the next one, or -1 when none is pending. */
	double (*send_due_reports)(void);
	/* A line command other than create, destroy and quit; returns 0 when it knew it. */
	int (*run_command)(const char *line);
	/* Called before the device is destroyed (optional). */
	void (*before_destroy)(void);
};

extern struct feature_state feature;  /* as the driver last wrote it */
extern int created;                   /* the HID device exists */
extern unsigned long input_reads;     /* GET_REPORT requests of the input report answered */
extern unsigned long feature_reads;   /* GET_REPORT requests of the feature report answered */

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The driver has the sensor on: power state D0, reporting all events. */
int powered(void);
/* Sends an input report (UHID_INPUT2); returns 0 when written. */
int send_input_report(const uint8_t *report, size_t size);
double seconds_since(const struct timespec *start);
/* Opens /dev/uhid; returns 0, or prints why not and returns -1. */
int uhid_sensor_open(const struct uhid_sensor *sensor);
/* Serves the device and the commands on stdin until "quit"; destroys the device; returns the exit status. */
int uhid_sensor_run(const struct uhid_sensor *sensor);

#endif
