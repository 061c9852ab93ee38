// Thin shim over libiio: plain functions and structs for the Swift acquisition layer. No logic here.
#ifndef CIIO_H
#define CIIO_H

#include <iio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/// libiio's own version, as the library reports it at run time.
void ciio_library_version(unsigned int *major, unsigned int *minor);

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

/// Attribute access returning a negative errno on failure; strings are NUL-terminated in `dst`.
ssize_t ciio_device_attr_read(const struct iio_device *dev, const char *attr, char *dst, size_t len);
ssize_t ciio_device_attr_write(const struct iio_device *dev, const char *attr, const char *src);
ssize_t ciio_device_buffer_attr_read(const struct iio_device *dev, const char *attr, char *dst, size_t len);
ssize_t ciio_channel_attr_read(const struct iio_channel *chn, const char *attr, char *dst, size_t len);
ssize_t ciio_channel_attr_write(const struct iio_channel *chn, const char *attr, const char *src);

/// A buffer of `samples` scans; NULL with *error_out set to errno on failure (EBUSY: another reader).
struct iio_buffer *ciio_device_create_buffer(const struct iio_device *dev, size_t samples, int *error_out);

/// Blocks until the buffer is full; bytes read or a negative errno (-ETIMEDOUT, -EBADF after cancel).
ssize_t ciio_buffer_refill(struct iio_buffer *buf);

/// Where a channel's first element is in the refilled buffer, the scan stride and the end.
const uint8_t *ciio_buffer_first(const struct iio_buffer *buf, const struct iio_channel *chn);
ptrdiff_t ciio_buffer_step(const struct iio_buffer *buf);
const uint8_t *ciio_buffer_end(const struct iio_buffer *buf);

/// libiio's message for an errno value.
void ciio_strerror(int error, char *dst, size_t len);

#endif
