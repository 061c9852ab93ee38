// Thin shim over libiio: plain functions and structs for the Swift acquisition layer. No logic here.
// Swift calls libiio (iio.h, included here) directly where a call needs no translation; the shim keeps only
// what hides a C detail: errno captured next to the call that set it, a struct flattened, a typed conversion.
#ifndef CIIO_H
#define CIIO_H

#include <iio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/// A context for `uri` ("local:", "ip:HOST", ...); NULL with *error_out set to errno on failure.
struct iio_context *ciio_create_context(const char *uri, int *error_out);

/// How one scan element is stored in a buffer, flattened from libiio's iio_data_format.
struct ciio_scan_format {
    unsigned int storage_bits;   /* "length": bits the element occupies in a scan */
    unsigned int bits;           /* significant bits */
    unsigned int shift;          /* right shift before the significant bits */
    unsigned int repeat;
    bool is_signed;
    bool is_big_endian;
    bool is_scan_element;
    long index;                  /* scan index; negative when not a scan element */
};

/// The scan format and index of a channel.
void ciio_channel_scan_format(const struct iio_channel *chn, struct ciio_scan_format *out);

/// One element in buffer memory, decoded by libiio's iio_channel_convert (endianness, shift, sign
/// extension) and widened to 64 bits. Storage wider than 64 bits is not an accelerometer's: returns 0.
int64_t ciio_channel_convert_integer(const struct iio_channel *chn, const void *src);

/// A buffer of `samples` scans; NULL with *error_out set to errno on failure (EBUSY: another reader).
struct iio_buffer *ciio_device_create_buffer(const struct iio_device *dev, size_t samples, int *error_out);

/// A pipe to wake a thread out of poll(): both ends close-on-exec and non-blocking, set atomically (pipe2,
/// which Swift's Glibc module does not export). Returns 0, or -1 with errno.
int ciio_wake_pipe(int fds[2]);

#endif
