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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/uhid.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* HID Usage Tables, Sensors page (0x20), as used by drivers/iio/common/hid-sensors and include/linux/hid-sensor-ids.h. */
#define REPORT_ID 1
/* Values of the two selector fields as the kernel writes them: index of the usage in the selector list plus
 * the logical minimum, which hid-sensor-attributes forces to 1; our descriptor declares minimum 1 to agree. */
#define POWER_D0_FULL 2   /* HID_USAGE_SENSOR_PROP_POWER_STATE_D0_FULL_POWER_ENUM, second selector */
#define POWER_D4_OFF 6    /* ..._D4_POWER_OFF_ENUM, sixth selector */
#define REPORTING_ALL 2   /* HID_USAGE_SENSOR_PROP_REPORTING_STATE_ALL_EVENTS_ENUM, second selector */
#define REPORTING_NONE 1  /* ..._NO_EVENTS_ENUM, first selector */
/* Unit exponent -4 on the axes with no unit item: the driver then reads the unit as g and publishes
 * in_accel_scale = 9.80665e-4 (hid_sensor_format_scale), so one count is 1e-4 g. */
#define COUNTS_PER_G 10000.0
#define STANDARD_GRAVITY 9.80665

static const uint8_t report_descriptor[] = {
	0x05, 0x20,             /* Usage Page (Sensors) */
	0x09, 0x73,             /* Usage (Motion: Accelerometer 3D) */
	0xA1, 0x00,             /* Collection (Physical) */
	0x85, REPORT_ID,        /*   Report ID */
	/* Feature report, field 0: reporting state (named array) */
	0x0A, 0x16, 0x03,       /*   Usage (Property: Reporting State) */
	0x15, 0x01, 0x25, 0x06, /*   Logical Minimum (1), Logical Maximum (6) */
	0x75, 0x08, 0x95, 0x01, /*   Report Size (8), Report Count (1) */
	0xA1, 0x02,             /*   Collection (Logical) */
	0x0A, 0x40, 0x08,       /*     No Events */
	0x0A, 0x41, 0x08,       /*     All Events */
	0x0A, 0x42, 0x08,       /*     Threshold Events */
	0x0A, 0x43, 0x08,       /*     No Events Wake */
	0x0A, 0x44, 0x08,       /*     All Events Wake */
	0x0A, 0x45, 0x08,       /*     Threshold Events Wake */
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */
	0xC0,                   /*   End Collection */
	/* Feature report, field 1: power state (named array) */
	0x0A, 0x19, 0x03,       /*   Usage (Property: Power State) */
	0x15, 0x01, 0x25, 0x06,
	0x75, 0x08, 0x95, 0x01,
	0xA1, 0x02,             /*   Collection (Logical) */
	0x0A, 0x50, 0x08,       /*     Undefined */
	0x0A, 0x51, 0x08,       /*     D0 Full Power */
	0x0A, 0x52, 0x08,       /*     D1 Low Power */
	0x0A, 0x53, 0x08,       /*     D2 Standby with Wake */
	0x0A, 0x54, 0x08,       /*     D3 Sleep with Wake */
	0x0A, 0x55, 0x08,       /*     D4 Power Off */
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */
	0xC0,                   /*   End Collection */
	/* Feature report, field 2: report interval in ms (no unit item: the driver's default unit) */
	0x0A, 0x0E, 0x03,       /*   Usage (Property: Report Interval) */
	0x15, 0x00, 0x27, 0xFF, 0xFF, 0xFF, 0x7F,
	0x75, 0x20, 0x95, 0x01, 0x55, 0x00,
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */
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
	0xC0,                   /* End Collection */
};

struct sample {
	double t;
	int32_t counts[3];
};

struct feature_state {
	uint8_t reporting_state;
	uint8_t power_state;
	uint32_t interval_ms;
	uint16_t sensitivity;
};

static struct sample *samples;
static size_t sample_count;
static int uhid_fd = -1;
static int created;
static struct feature_state feature = { REPORTING_NONE, POWER_D4_OFF, 10, 1 };
static struct sample last_sent; /* also the sample held while idle */
static struct timespec idle_next;   /* when the next idle report is due */
static unsigned long idle_sent;

/* Playing state: the next sample index, the last index (exclusive), and the monotonic time of t = from. */
static int playing;
static size_t play_next, play_end;
static double play_from_s;
static struct timespec play_start;
static unsigned long play_sent, play_sent_unpowered, plays_done;

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

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

static int send_event(struct uhid_event *ev)
{
	ssize_t n = write(uhid_fd, ev, sizeof(*ev));
	if (n != (ssize_t)sizeof(*ev)) {
		say("error write-uhid type=%u: %s", ev->type, n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

static size_t encode_input(uint8_t *buf, const struct sample *s)
{
	buf[0] = REPORT_ID;
	for (int axis = 0; axis < 3; axis++) {
		uint32_t v = (uint32_t)s->counts[axis];
		for (int b = 0; b < 4; b++)
			buf[1 + axis * 4 + b] = (uint8_t)(v >> (8 * b)); /* HID fields are little-endian */
	}
	return 13;
}

static size_t encode_feature(uint8_t *buf)
{
	buf[0] = REPORT_ID;
	buf[1] = feature.reporting_state;
	buf[2] = feature.power_state;
	for (int b = 0; b < 4; b++)
		buf[3 + b] = (uint8_t)(feature.interval_ms >> (8 * b));
	buf[7] = (uint8_t)feature.sensitivity;
	buf[8] = (uint8_t)(feature.sensitivity >> 8);
	return 9;
}

static void decode_feature(const uint8_t *buf, size_t size)
{
	if (size < 9 || buf[0] != REPORT_ID)
		return;
	feature.reporting_state = buf[1];
	feature.power_state = buf[2];
	feature.interval_ms = (uint32_t)buf[3] | (uint32_t)buf[4] << 8 | (uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 24;
	feature.sensitivity = (uint16_t)(buf[7] | buf[8] << 8);
}

static void create_device(void)
{
	if (created) {
		say("error create: device exists");
		return;
	}
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_CREATE2;
	snprintf((char *)ev.u.create2.name, sizeof(ev.u.create2.name), "stepd-test HID sensor hub accelerometer");
	snprintf((char *)ev.u.create2.phys, sizeof(ev.u.create2.phys), "uhid-accel");
	memcpy(ev.u.create2.rd_data, report_descriptor, sizeof(report_descriptor));
	ev.u.create2.rd_size = sizeof(report_descriptor);
	ev.u.create2.bus = BUS_VIRTUAL;
	ev.u.create2.vendor = 0x1209;  /* pid.codes, the open-source vendor id */
	ev.u.create2.product = 0x0001; /* pid.codes' test product id */
	if (send_event(&ev) == 0) {
		created = 1;
		feature = (struct feature_state){ REPORTING_NONE, POWER_D4_OFF, 10, 1 };
		say("created");
	}
}

static void stop_playing(const char *why)
{
	if (!playing)
		return;
	playing = 0;
	plays_done++;
	say("play-%s %lu sent=%lu unpowered=%lu idle_sent=%lu", why, plays_done, play_sent, play_sent_unpowered, idle_sent);
}

static void destroy_device(void)
{
	if (!created) {
		say("error destroy: no device");
		return;
	}
	stop_playing("unplugged");
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_DESTROY;
	if (send_event(&ev) == 0) {
		created = 0;
		say("destroyed");
	}
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
	clock_gettime(CLOCK_MONOTONIC, &play_start);
	playing = 1;
	say("play-started from=%.3f to=%.3f samples=%zu", from_s, to_s, end - i);
}

static int powered(void)
{
	return feature.power_state == POWER_D0_FULL && feature.reporting_state == REPORTING_ALL;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static int send_input(const struct sample *sample)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_INPUT2;
	ev.u.input2.size = (uint16_t)encode_input(ev.u.input2.data, sample);
	if (send_event(&ev) != 0)
		return -1;
	last_sent = *sample;
	return 0;
}

/* While powered and not playing, repeats the held sample at the report interval; returns seconds until
 * the next one is due, or -1 when the device is silent. */
static double send_idle_samples(void)
{
	if (!created || playing || !powered())
		return -1;
	double interval_s = (feature.interval_ms ? feature.interval_ms : 10) / 1000.0;
	double late_s = seconds_since(&idle_next);
	if (late_s > interval_s) { /* just powered on (or stalled): start the cadence now */
		clock_gettime(CLOCK_MONOTONIC, &idle_next);
		late_s = 0;
	}
	if (late_s >= 0) {
		struct sample held = last_sent;
		if (send_input(&held) == 0)
			idle_sent++;
		long ns = idle_next.tv_nsec + (long)(interval_s * 1e9);
		idle_next.tv_sec += ns / 1000000000L;
		idle_next.tv_nsec = ns % 1000000000L;
		late_s -= interval_s;
	}
	return -late_s;
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
		if (powered()) {
			if (send_input(&samples[play_next]) != 0) {
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

static void answer_get_report(const struct uhid_get_report_req *req)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_GET_REPORT_REPLY;
	ev.u.get_report_reply.id = req->id;
	if (req->rnum != REPORT_ID) {
		ev.u.get_report_reply.err = EINVAL;
	} else if (req->rtype == UHID_FEATURE_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)encode_feature(ev.u.get_report_reply.data);
	} else if (req->rtype == UHID_INPUT_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)encode_input(ev.u.get_report_reply.data, &last_sent);
	} else {
		ev.u.get_report_reply.err = EINVAL;
	}
	send_event(&ev);
}

static void answer_set_report(const struct uhid_set_report_req *req)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_SET_REPORT_REPLY;
	ev.u.set_report_reply.id = req->id;
	if (req->rnum == REPORT_ID && req->rtype == UHID_FEATURE_REPORT && req->size >= 9) {
		struct feature_state before = feature;
		decode_feature(req->data, req->size);
		if (before.power_state != feature.power_state || before.reporting_state != feature.reporting_state ||
		    before.interval_ms != feature.interval_ms || before.sensitivity != feature.sensitivity)
			say("feature power=%s reporting=%s interval_ms=%u sensitivity=%u",
			    feature.power_state == POWER_D0_FULL ? "on" : "off",
			    feature.reporting_state == REPORTING_ALL ? "all" : "none",
			    feature.interval_ms, feature.sensitivity);
	} else {
		ev.u.set_report_reply.err = EINVAL;
	}
	send_event(&ev);
}

static void read_uhid_event(void)
{
	struct uhid_event ev;
	ssize_t n = read(uhid_fd, &ev, sizeof(ev));
	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			say("error read-uhid: %s", strerror(errno));
		return;
	}
	switch (ev.type) {
	case UHID_START:
		say("started");
		break;
	case UHID_STOP:
		say("stopped");
		break;
	case UHID_OPEN:
		say("opened");
		break;
	case UHID_CLOSE:
		say("closed");
		break;
	case UHID_GET_REPORT:
		answer_get_report(&ev.u.get_report);
		break;
	case UHID_SET_REPORT:
		answer_set_report(&ev.u.set_report);
		break;
	default:
		break;
	}
}

static void hold_sample(double t_s)
{
	size_t i = 0;
	while (i + 1 < sample_count && samples[i].t < t_s)
		i++;
	last_sent = samples[i];
	say("holding t=%.3f", samples[i].t);
}

/* Returns 0 to go on, 1 to quit. */
static int run_command(char *line)
{
	double from_s, to_s;
	line[strcspn(line, "\r\n")] = 0;
	if (sscanf(line, "hold %lf", &from_s) == 1)
		hold_sample(from_s);
	else if (strcmp(line, "create") == 0)
		create_device();
	else if (strcmp(line, "destroy") == 0)
		destroy_device();
	else if (sscanf(line, "play %lf %lf", &from_s, &to_s) == 2)
		start_playing(from_s, to_s);
	else if (strcmp(line, "stop") == 0)
		stop_playing("stopped");
	else if (strcmp(line, "quit") == 0)
		return 1;
	else if (line[0])
		say("error unknown command: %s", line);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: uhid-accel RECORDING.csv < commands\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	load_recording(argv[1]);
	uhid_fd = open("/dev/uhid", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (uhid_fd < 0) {
		fprintf(stderr, "uhid-accel: cannot open /dev/uhid: %s\n", strerror(errno));
		return 1;
	}
	say("ready samples=%zu duration_s=%.3f", sample_count, samples[sample_count - 1].t - samples[0].t);

	char command[256];
	size_t command_len = 0;
	int stdin_open = 1;
	for (;;) {
		double wait_s = send_due_samples();
		double idle_wait_s = send_idle_samples();
		if (wait_s < 0 || (idle_wait_s >= 0 && idle_wait_s < wait_s))
			wait_s = idle_wait_s;
		struct pollfd fds[2] = {
			{ .fd = uhid_fd, .events = POLLIN },
			{ .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
		};
		struct timespec timeout = { 0, 0 };
		if (wait_s >= 0) {
			timeout.tv_sec = (time_t)wait_s;
			timeout.tv_nsec = (long)((wait_s - (double)timeout.tv_sec) * 1e9);
		}
		int ready = ppoll(fds, 2, wait_s >= 0 ? &timeout : NULL, NULL);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			say("error poll: %s", strerror(errno));
			return 1;
		}
		if (fds[0].revents & POLLIN)
			read_uhid_event();
		if (fds[1].revents & (POLLIN | POLLHUP)) {
			char c;
			ssize_t n = read(STDIN_FILENO, &c, 1);
			if (n <= 0) {
				stdin_open = 0; /* the writer went away: keep serving the device until killed */
				continue;
			}
			if (c == '\n' || command_len == sizeof(command) - 1) {
				command[command_len] = 0;
				command_len = 0;
				if (run_command(command))
					break;
			} else {
				command[command_len++] = c;
			}
		}
	}
	if (created)
		destroy_device();
	close(uhid_fd);
	return 0;
}
