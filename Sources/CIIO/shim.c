#define _GNU_SOURCE   // pipe2
#include "ciio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

struct iio_context *ciio_create_context(const char *uri, int *error_out)
{
    struct iio_context *ctx = iio_create_context_from_uri(uri);
    *error_out = ctx ? 0 : errno;
    return ctx;
}

void ciio_channel_scan_format(const struct iio_channel *chn, struct ciio_scan_format *out)
{
    const struct iio_data_format *f = iio_channel_get_data_format(chn);
    out->storage_bits = f->length;
    out->bits = f->bits;
    out->shift = f->shift;
    out->repeat = f->repeat;
    out->is_signed = f->is_signed;
    out->is_big_endian = f->is_be;
    out->is_scan_element = iio_channel_is_scan_element(chn);
    out->index = iio_channel_get_index(chn);
}

int64_t ciio_channel_convert_integer(const struct iio_channel *chn, const void *src)
{
    const struct iio_data_format *f = iio_channel_get_data_format(chn);
    uint8_t dst[8] = { 0 };
    if (f->length > 64)
        return 0;
    iio_channel_convert(chn, dst, src);
    switch (f->length) {
    case 8: return f->is_signed ? (int64_t) *(int8_t *) dst : (int64_t) *(uint8_t *) dst;
    case 16: return f->is_signed ? (int64_t) *(int16_t *) dst : (int64_t) *(uint16_t *) dst;
    case 32: return f->is_signed ? (int64_t) *(int32_t *) dst : (int64_t) *(uint32_t *) dst;
    default: return *(int64_t *) dst;
    }
}

struct iio_buffer *ciio_device_create_buffer(const struct iio_device *dev, size_t samples, int *error_out)
{
    struct iio_buffer *buf = iio_device_create_buffer(dev, samples, false);
    *error_out = buf ? 0 : errno;
    return buf;
}


int ciio_wake_pipe(int fds[2])
{
    return pipe2(fds, O_CLOEXEC | O_NONBLOCK);
}
