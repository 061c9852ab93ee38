/*
 * uhid-accel: a HID sensor-hub accelerometer made in user space through /dev/uhid, for the QEMU harness.
 *
 * The kernel's hid-sensor-hub binds it and hid-sensor-accel-3d turns it into a real IIO device
 * ("accel_3d") with its own trigger and kfifo buffer. This program plays the device's side: it answers
 * the driver's GET_REPORT/SET_REPORT requests (power state, reporting state, report interval,
 * sensitivity) and sends input reports with x/y/z from a real recording at the recording's timing.
 *
 * Like a real sensor, it reports only while the driver has it powered (power state D0, reporting state
 * "all events"), and then continuously: at the report interval it repeats the sample it holds (a device
 * lying still), and while playing it sends the recording's samples at the recording's own timing.
 *
 * Each input report carries the time its sample was taken (the HID sensor Timestamp usage, in microseconds
 * of the guest's CLOCK_MONOTONIC), as a sensor hub with a clock of its own does: hid-sensor-accel-3d then
 * stamps the scan with it instead of with the time the report arrived. So a starved guest, which sends what
 * fell due in a burst, changes when the samples arrive but not the times they carry. With --arrival-stamps
 * the report has no timestamp and the kernel stamps each scan on arrival, as for a hub without a clock.
 * Each "play-" line says how late the latest report of the play was sent (late_max_ms).
 *
 * Test tool, not product code. Driven by line commands on stdin (the guest's init script writes them
 * into a FIFO); every state change is printed as one line on stdout, which the init script waits for.
 *   create              create the HID device (UHID_CREATE2)
 *   destroy             destroy it (hot-unplug; the kernel removes the IIO device)
 *   hold T              hold the recording's sample at time T (what the device reports when idle)
 *   play FROM TO        send the recording's samples with FROM <= t < TO at real time, starting now
 *   stop                stop playing (the last sample sent is held)
 *   quit                destroy and exit
 *
 * Recording: CSV with header "t,x,y,z", t in seconds, x/y/z in m/s^2 (the ../shared/data layout).
 * The uhid plumbing and the event loop are in uhid-sensor.c.
 */
#define _GNU_SOURCE
#include "uhid-sensor.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unit exponent -4 on the axes with no unit item: the driver then reads the unit as g and publishes
 * in_accel_scale = 9.80665e-4 (hid_sensor_format_scale), so one count is 1e-4 g. */
#define COUNTS_PER_G 10000.0
#define STANDARD_GRAVITY 9.80665

/* Input report, last field: the sample's time, a 64-bit count of microseconds (unit exponent -6, no unit
 * item: the driver's default unit for a timestamp is the second), which hid-sensor-attributes turns into
 * timestamp_ns_scale = 1000. The logical range is only declared (HID's items hold 32 bits at most); the
 * sensor hub driver hands the field's 8 raw bytes to hid-sensor-accel-3d. */
#define TIMESTAMP_FIELD \
	0x0A, 0xA9, 0x05,       /*   Usage (Time: Timestamp) */ \
	0x17, 0x00, 0x00, 0x00, 0x80, 0x27, 0xFF, 0xFF, 0xFF, 0x7F, \
	0x75, 0x40, 0x95, 0x01, 0x55, 0x0A, \
	0x81, 0x02,             /*   Input (Data, Variable, Absolute) */

static const uint8_t report_descriptor[] = {
	0x05, 0x20,             /* Usage Page (Sensors) */
	0x09, 0x73,             /* Usage (Motion: Accelerometer 3D) */
	0xA1, 0x00,             /* Collection (Physical) */
	SENSOR_FEATURE_FIELDS
	/* Feature report, field 3: change sensitivity (absolute) of acceleration, 0.01 g */
	0x0A, 0x52, 0x14,       /*   Usage (Acceleration | Change Sensitivity Absolute) */
	0x15, 0x00, 0x26, 0xFF, 0x7F,
	0x75, 0x10, 0x95, 0x01, 0x55, 0x0E,
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */
	/* Input report: x, y, z as signed 32-bit counts of 1e-4 g */
	0x0A, 0x53, 0x04,       /*   Usage (Acceleration Axis X) */
	0x17, 0x00, 0x00, 0x00, 0x80, 0x27, 0xFF, 0xFF, 0xFF, 0x7F,
	0x75, 0x20, 0x95, 0x01, 0x55, 0x0C,
	0x81, 0x02,             /*   Input (Data, Variable, Absolute) */
	0x0A, 0x54, 0x04,       /*   Usage (Acceleration Axis Y) */
	0x81, 0x02,
	0x0A, 0x55, 0x04,       /*   Usage (Acceleration Axis Z) */
	0x81, 0x02,
	TIMESTAMP_FIELD
	0xC0,                   /* End Collection */
};

/* The timestamp field alone: --arrival-stamps leaves it out of the descriptor (unstamped_descriptor). */
static const uint8_t timestamp_field[] = { TIMESTAMP_FIELD };

struct sample {
	double t;
	int32_t counts[3];
};

static int device_stamps = 1;        /* reports carry the sample's time (not with --arrival-stamps) */
static int64_t last_stamp_us;        /* the time carried by the report last sent */
static double play_late_max_s;       /* how late the latest report of this play was sent */

static struct sample *samples;
static size_t sample_count;
static struct sample last_sent; /* also the sample held while idle */
static struct timespec idle_next;   /* when the next idle report is due */
static int idle_cadence;            /* the held sample has been repeated since the device was last silent */
static unsigned long idle_sent;

/* Playing state: the next sample index, the last index (exclusive), and the monotonic time of t = from. */
static int playing;
static size_t play_next, play_end;
static double play_from_s;
static struct timespec play_start;
static unsigned long play_sent, play_sent_unpowered, plays_done;

static int32_t counts_from_ms2(double ms2)
{
	return (int32_t)lround(ms2 / STANDARD_GRAVITY * COUNTS_PER_G);
}

static void load_recording(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "uhid-accel: cannot open recording %s: %s\n", path, strerror(errno));
		exit(2);
	}
	char line[256];
	size_t capacity = 0;
	while (fgets(line, sizeof(line), f)) {
		double t, x, y, z;
		if (sscanf(line, "%lf,%lf,%lf,%lf", &t, &x, &y, &z) != 4)
			continue; /* the header */
		if (sample_count == capacity) {
			capacity = capacity ? capacity * 2 : 4096;
			samples = realloc(samples, capacity * sizeof(*samples));
			if (!samples) {
				fprintf(stderr, "uhid-accel: out of memory\n");
				exit(2);
			}
		}
		samples[sample_count].t = t;
		samples[sample_count].counts[0] = counts_from_ms2(x);
		samples[sample_count].counts[1] = counts_from_ms2(y);
		samples[sample_count].counts[2] = counts_from_ms2(z);
		sample_count++;
	}
	fclose(f);
	if (sample_count == 0) {
		fprintf(stderr, "uhid-accel: no t,x,y,z rows in %s\n", path);
		exit(2);
	}
	last_sent = samples[0];
}

static size_t encode_sample(uint8_t *buf, const struct sample *s, int64_t stamp_us)
{
	buf[0] = REPORT_ID;
	for (int axis = 0; axis < 3; axis++) {
		uint32_t v = (uint32_t)s->counts[axis];
		for (int b = 0; b < 4; b++)
			buf[1 + axis * 4 + b] = (uint8_t)(v >> (8 * b)); /* HID fields are little-endian */
	}
	if (!device_stamps)
		return 13;
	for (int b = 0; b < 8; b++)
		buf[13 + b] = (uint8_t)((uint64_t)stamp_us >> (8 * b));
	return 21;
}

/* A point on CLOCK_MONOTONIC, offset by OFFSET_S seconds, in microseconds. */
static int64_t stamp_us_at(const struct timespec *base, double offset_s)
{
	return (int64_t)base->tv_sec * 1000000 + base->tv_nsec / 1000 + (int64_t)llround(offset_s * 1e6);
}

static struct timespec timespec_from_us(int64_t us)
{
	struct timespec t = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	return t;
}

static void timespec_add(struct timespec *t, double seconds)
{
	long ns = t->tv_nsec + (long)llround(seconds * 1e9);
	t->tv_sec += ns / 1000000000L;
	t->tv_nsec = ns % 1000000000L;
}

static double report_interval_s(void)
{
	return (feature.interval_ms ? feature.interval_ms : 10) / 1000.0;
}

static void stop_playing(const char *why)
{
	if (!playing)
		return;
	playing = 0;
	/* The held sample follows on the same cadence, one interval after the last sample played. */
	idle_next = timespec_from_us(last_stamp_us);
	timespec_add(&idle_next, report_interval_s());
	plays_done++;
	say("play-%s %lu sent=%lu unpowered=%lu idle_sent=%lu late_max_ms=%.0f input_reads=%lu feature_reads=%lu", why,
	    plays_done, play_sent, play_sent_unpowered, idle_sent, play_late_max_s * 1000, input_reads, feature_reads);
}

static void start_playing(double from_s, double to_s)
{
	if (!created) {
		say("error play: no device");
		return;
	}
	size_t i = 0;
	while (i < sample_count && samples[i].t < from_s)
		i++;
	size_t end = i;
	while (end < sample_count && samples[end].t < to_s)
		end++;
	play_next = i;
	play_end = end;
	play_from_s = from_s;
	play_sent = play_sent_unpowered = 0;
	play_late_max_s = 0;
	/* A device reporting its held sample starts walking at its next tick: one cadence, no gap in its stamps. */
	if (idle_cadence)
		play_start = idle_next;
	else
		clock_gettime(CLOCK_MONOTONIC, &play_start);
	playing = 1;
	say("play-started from=%.3f to=%.3f samples=%zu", from_s, to_s, end - i);
}

/* The input report a GET_REPORT reads: the sample last sent, or held. */
static size_t encode_input(uint8_t *buf)
{
	return encode_sample(buf, &last_sent, last_stamp_us);
}

/* Sends SAMPLE, taken at STAMP_US (CLOCK_MONOTONIC). */
static int send_sample(const struct sample *sample, int64_t stamp_us)
{
	uint8_t report[21];
	if (send_input_report(report, encode_sample(report, sample, stamp_us)) != 0)
		return -1;
	last_sent = *sample;
	last_stamp_us = stamp_us;
	return 0;
}

/* While powered and not playing, repeats the held sample at the report interval; returns seconds until
 * the next one is due, or -1 when the device is silent. Like a sensor, it samples on its own cadence from the
 * moment it is powered: reports a starved process could not send when due go out late, in a burst, each with
 * the time it was due, none skipped. */
static double send_idle_samples(void)
{
	if (!created || !powered()) {
		idle_cadence = 0;
		return -1;
	}
	if (playing)
		return -1;
	if (!idle_cadence) { /* just powered on: the cadence starts now */
		clock_gettime(CLOCK_MONOTONIC, &idle_next);
		idle_cadence = 1;
	}
	while (seconds_since(&idle_next) >= 0) {
		struct sample held = last_sent;
		if (send_sample(&held, stamp_us_at(&idle_next, 0)) == 0)
			idle_sent++;
		timespec_add(&idle_next, report_interval_s());
	}
	return -seconds_since(&idle_next);
}

/* Sends every recording sample that is due; returns seconds until the next one is, or -1 when none is pending. */
static double send_due_samples(void)
{
	while (playing) {
		if (play_next >= play_end) {
			stop_playing("done");
			break;
		}
		double due_s = samples[play_next].t - play_from_s;
		double wait_s = due_s - seconds_since(&play_start);
		if (wait_s > 0)
			return wait_s;
		if (-wait_s > play_late_max_s)
			play_late_max_s = -wait_s;
		if (powered()) {
			if (send_sample(&samples[play_next], stamp_us_at(&play_start, due_s)) != 0) {
				stop_playing("failed");
				break;
			}
			play_sent++;
		} else {
			last_sent = samples[play_next]; /* a sensor that is off measures but does not report */
			play_sent_unpowered++;
		}
		play_next++;
	}
	return -1;
}

static void hold_sample(double t_s)
{
	size_t i = 0;
	while (i + 1 < sample_count && samples[i].t < t_s)
		i++;
	last_sent = samples[i];
	say("holding t=%.3f", samples[i].t);
}

static double send_due_reports(void)
{
	double wait_s = send_due_samples();
	double idle_wait_s = send_idle_samples();
	return (wait_s < 0 || (idle_wait_s >= 0 && idle_wait_s < wait_s)) ? idle_wait_s : wait_s;
}

static int run_command(const char *line)
{
	double from_s, to_s;
	if (sscanf(line, "hold %lf", &from_s) == 1)
		hold_sample(from_s);
	else if (sscanf(line, "play %lf %lf", &from_s, &to_s) == 2)
		start_playing(from_s, to_s);
	else if (strcmp(line, "stop") == 0)
		stop_playing("stopped");
	else
		return -1;
	return 0;
}

static void before_destroy(void)
{
	stop_playing("unplugged");
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--arrival-stamps") == 0) {
		device_stamps = 0;
		argv++;
		argc--;
	}
	/* For --arrival-stamps: the same descriptor without the timestamp field, which comes just before its
	 * End Collection, so that the kernel stamps each scan on arrival. */
	uint8_t unstamped_descriptor[sizeof(report_descriptor) - sizeof(timestamp_field)];
	size_t kept = sizeof(report_descriptor) - sizeof(timestamp_field) - 1;
	memcpy(unstamped_descriptor, report_descriptor, kept);
	unstamped_descriptor[kept] = report_descriptor[sizeof(report_descriptor) - 1];
	const struct uhid_sensor accelerometer = {
		.program = "uhid-accel",
		.name = "stepd-test HID sensor hub accelerometer",
		.product = 0x0001, /* pid.codes' test product id */
		.descriptor = device_stamps ? report_descriptor : unstamped_descriptor,
		.descriptor_size = device_stamps ? sizeof(report_descriptor) : sizeof(unstamped_descriptor),
		.initial_interval_ms = 10,
		.encode_input = encode_input,
		.send_due_reports = send_due_reports,
		.run_command = run_command,
		.before_destroy = before_destroy,
	};
	if (argc != 2) {
		fprintf(stderr, "usage: uhid-accel [--arrival-stamps] RECORDING.csv < commands\n");
		return 2;
	}
	load_recording(argv[1]);
	if (uhid_sensor_open(&accelerometer) != 0)
		return 1;
	say("ready samples=%zu duration_s=%.3f", sample_count, samples[sample_count - 1].t - samples[0].t);
	return uhid_sensor_run(&accelerometer);
}
