#ifndef CLIBCRYPTO_H
#define CLIBCRYPTO_H
// A thin shim over OpenSSL's libcrypto: one HMAC-SHA256, for the MQTT device id (Sources/StepFleet/
// DeviceIdentity.swift). libcrypto is loaded on first use (dlopen), not linked: only a daemon that publishes
// over MQTT needs it, and that one has it mapped already, since libmosquitto links it.
#include <stddef.h>

/// Writes HMAC-SHA256(key, message) to `out` (32 bytes). 0 on success; -1 when libcrypto cannot be loaded
/// (clibcrypto_error says why), -2 when it fails.
int clibcrypto_hmac_sha256(const void *key, size_t key_length, const void *message, size_t message_length,
                           unsigned char out[32]);
/// Why libcrypto could not be loaded.
const char *clibcrypto_error(void);

#endif
