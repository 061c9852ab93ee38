#ifndef CMOSQUITTO_H
#define CMOSQUITTO_H
// A thin shim over libmosquitto (Eclipse Mosquitto's client library): plain functions whose names say what
// they do, an opaque client, and callbacks that hand back the caller's context. No logic: reconnecting,
// the outbox and what to publish are Swift's (Sources/StepFleet).
#include <stdbool.h>

typedef struct cmosq_client cmosq_client;

/// Called on libmosquitto's network thread.
typedef void (*cmosq_connect_callback)(void *context, int connack_code);
typedef void (*cmosq_disconnect_callback)(void *context, int reason);
/// A QoS 1 message was acknowledged by the broker (PUBACK): its message id.
typedef void (*cmosq_publish_callback)(void *context, int message_id);

/// Loads libmosquitto.so.1 (dlopen: the daemon does not link it) and calls mosquitto_lib_init; once per process.
/// Not MOSQ_ERR_SUCCESS when the library cannot be loaded: cmosq_error_string says why. Call it before the rest.
int cmosq_library_init(void);

/// A client with a clean session, MQTT 3.1.1, plain: TLS is the relay's (Sources/StepFleet/MQTTRelay.swift).
/// NULL when out of memory or libmosquitto is not loaded.
cmosq_client *cmosq_new(const char *client_id, void *context, cmosq_connect_callback on_connect,
                        cmosq_disconnect_callback on_disconnect, cmosq_publish_callback on_publish);
void cmosq_destroy(cmosq_client *client);

int cmosq_set_will(cmosq_client *client, const char *topic, const char *payload, int qos, bool retain);
int cmosq_set_credentials(cmosq_client *client, const char *username, const char *password);
/// Tells libmosquitto that another thread (the caller's) runs its loop, so that a publish from any thread wakes it.
void cmosq_set_threaded(cmosq_client *client);
/// mosquitto_connect_async: starts a connection (non-blocking); `error_number` receives errno at once, for
/// MOSQ_ERR_ERRNO. Called again after a failure, it starts a fresh attempt. Nothing here retries by itself.
int cmosq_connect_async(cmosq_client *client, const char *host, int port, int keepalive_seconds, int *error_number);
/// One pass of mosquitto_loop (network I/O, keepalive, callbacks), waiting up to `timeout_ms`; not
/// MOSQ_ERR_SUCCESS once the connection has failed or closed (`error_number`: errno, for MOSQ_ERR_ERRNO).
int cmosq_loop(cmosq_client *client, int timeout_ms, int *error_number);
/// mosquitto_socket: the connection's socket descriptor (-1 without one), valid until the connection ends.
int cmosq_socket(cmosq_client *client);
/// Sends DISCONNECT (so no last will); the loop then ends the connection.
int cmosq_disconnect(cmosq_client *client);

/// Queues a message; `message_id` receives the id its PUBACK will carry.
int cmosq_publish(cmosq_client *client, const char *topic, const void *payload, int length, int qos, bool retain,
                  int *message_id);

/// MOSQ_ERR_SUCCESS, for comparisons in Swift.
int cmosq_success(void);
/// A libmosquitto result in words (errno's words for MOSQ_ERR_ERRNO).
const char *cmosq_error_string(int code);
/// A result of cmosq_connect_async or cmosq_loop in words, with the errno it gave.
const char *cmosq_failure_string(int code, int error_number);
/// A CONNACK refusal in words ("Connection Refused: not authorised.").
const char *cmosq_connack_string(int code);

#endif
