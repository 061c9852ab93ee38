/*
 * uhid-press: a HID sensor-hub barometer made in user space through /dev/uhid, for the QEMU harness.
 *
 * The kernel's hid-sensor-hub binds it and hid-sensor-press turns it into a real IIO device ("press")
 * with in_pressure_raw, in_pressure_scale (kPa per count) and in_pressure_sampling_frequency. This program
 * plays the device's side: it answers the driver's GET_REPORT/SET_REPORT requests (power state, reporting
 * state, report interval, sensitivity; the input report for a raw read) and, while the driver has it
 * powered (D0, all events), sends the pressure it holds at the report interval, as a real sensor does.
 *
 * Report descriptor after the HID Sensor Usages (HUTRR39) and include/linux/hid-sensor-ids.h: Sensors page,
 * Environmental: Atmospheric Pressure (0x31) in a physical collection; feature fields reporting state and
 * power state (named arrays), report interval (ms), change sensitivity absolute of atmospheric pressure;
 * input field Data: Atmospheric Pressure (0x431), 32 bits. No unit item: the spec's default unit is the bar,
 * and with unit exponent -5 one count is 1e-5 bar = 1 Pa, so the driver publishes in_pressure_scale 0.001
 * (hid-sensor-attributes: 100 kPa a bar, times 1e-5).
 *
 * Test tool, not product code. Line commands on stdin (the guest's init writes them into a FIFO); every
 * state change is one line on stdout. The uhid plumbing and the event loop are in uhid-sensor.c.
 *   create      create the HID device (UHID_CREATE2)
 *   destroy     destroy it (hot-unplug; the kernel removes the IIO device)
 *   set KPA     hold this pressure (kPa) from now on
 *   quit        destroy and exit
 */
#define _GNU_SOURCE
#include "uhid-sensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const uint8_t report_descriptor[] = {
	0x05, 0x20,             /* Usage Page (Sensors) */
	0x09, 0x31,             /* Usage (Environmental: Atmospheric Pressure) */
	0xA1, 0x00,             /* Collection (Physical) */
	SENSOR_FEATURE_FIELDS
	/* Feature report, field 3: change sensitivity (absolute) of atmospheric pressure, 1 Pa */
	0x0A, 0x31, 0x14,       /*   Usage (Atmospheric Pressure | Change Sensitivity Absolute) */
	0x15, 0x00, 0x26, 0xFF, 0x7F,
	0x75, 0x10, 0x95, 0x01, 0x55, 0x0B,
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */
	/* Input report: atmospheric pressure, 32-bit counts of 1e-5 bar (1 Pa) */
	0x0A, 0x31, 0x04,       /*   Usage (Data: Atmospheric Pressure) */
	0x15, 0x00, 0x27, 0xFF, 0xFF, 0xFF, 0x7F,
	0x75, 0x20, 0x95, 0x01, 0x55, 0x0B,
	0x81, 0x02,             /*   Input (Data, Variable, Absolute) */
	0xC0,                   /* End Collection */
};

static uint32_t pascal = 101325;
static struct timespec next_report;
static unsigned long reports_sent;

static size_t encode_input(uint8_t *buf)
{
	buf[0] = REPORT_ID;
	for (int b = 0; b < 4; b++)
		buf[1 + b] = (uint8_t)(pascal >> (8 * b)); /* HID fields are little-endian */
	return 5;
}

/* While powered, reports the held pressure at the report interval; returns seconds until the next one,
 * or -1 when the device is silent. */
static double send_due_reports(void)
{
	if (!created || !powered())
		return -1;
	double interval_s = (feature.interval_ms ? feature.interval_ms : 100) / 1000.0;
	double wait_s = -seconds_since(&next_report);
	if (wait_s < -interval_s) { /* just powered on: start the cadence now */
		clock_gettime(CLOCK_MONOTONIC, &next_report);
		wait_s = 0;
	}
	if (wait_s <= 0) {
		uint8_t report[5];
		if (send_input_report(report, encode_input(report)) == 0)
			reports_sent++;
		long ns = next_report.tv_nsec + (long)(interval_s * 1e9);
		next_report.tv_sec += ns / 1000000000L;
		next_report.tv_nsec = ns % 1000000000L;
		wait_s += interval_s;
	}
	return wait_s > 0 ? wait_s : 0;
}

static int run_command(const char *line)
{
	double kpa;
	if (sscanf(line, "set %lf", &kpa) != 1 || kpa <= 0 || kpa >= 2000)
		return -1;
	pascal = (uint32_t)lround(kpa * 1000);
	say("holding %u Pa", pascal);
	return 0;
}

static void before_destroy(void)
{
	say("sent reports=%lu reads=%lu", reports_sent, input_reads);
}

int main(void)
{
	static const struct uhid_sensor barometer = {
		.program = "uhid-press",
		.name = "stepd-test HID sensor hub barometer",
		.product = 0x0002, /* pid.codes' second test product id */
		.descriptor = report_descriptor,
		.descriptor_size = sizeof(report_descriptor),
		.initial_interval_ms = 100,
		.encode_input = encode_input,
		.send_due_reports = send_due_reports,
		.run_command = run_command,
		.before_destroy = before_destroy,
	};
	if (uhid_sensor_open(&barometer) != 0)
		return 1;
	say("ready");
	return uhid_sensor_run(&barometer);
}
