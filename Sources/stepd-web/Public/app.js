// The page: fetches what it shows from stepd-web's /api (docs/web.md) and follows the daemon's events over
// Server-Sent Events (/api/events), so a step shows within a frame of reaching stepd-web.
"use strict";

const $ = (id) => document.getElementById(id);
const STATUS_EVERY_MS = 2000;
const DAYS = 30;
// `?static`: one snapshot, no event stream and no polling, for a screenshot (docs/web.md): an open event
// stream keeps headless Chromium's --virtual-time-budget from ever running out.
const SNAPSHOT = new URLSearchParams(location.search).has("static");

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

// Runs `task` at most once per `ms`, and once more after the last call, so that the final state is drawn.
function throttled(task, ms) {
  let last = 0, timer = null;
  return () => {
    const wait = last + ms - Date.now();
    if (timer) return;
    timer = setTimeout(async () => {
      timer = null;
      last = Date.now();
      try { await task(); } catch (error) { /* the status line says why the daemon is away */ }
    }, Math.max(0, wait));
  };
}

// ---- the pedometer ----

// Today's figures first (since local midnight in the daemon's zone), the count since the reset below them.
// A STEP carries the count since the reset: today's is that less the steps before today, known from the last
// STEPS or PEDOMETER (which brings the new day at midnight).
let stepsBeforeToday = 0;

function showCount(count) {
  $("steps").textContent = count.toLocaleString();
  $("steps").classList.remove("placeholder");
}

function showSteps(steps) {
  const today = steps.today || { steps: steps.steps, distance_m: steps.distance_m, since: steps.since,
                                 floors_ascended: steps.floors_ascended, floors_descended: steps.floors_descended };
  stepsBeforeToday = steps.steps - today.steps;
  showCount(today.steps);
  $("today-since").textContent = steps.today
    ? `today, since ${new Date(today.since).toLocaleString([], { dateStyle: "medium", timeStyle: "short" })}` : "";
  $("distance").textContent = formatDistance(today.distance_m);
  $("active").textContent = today.active_min === undefined ? "–" : `${today.active_min} min`;
  $("cadence").textContent = `${Math.round(steps.current_cadence_spm ?? steps.cadence_spm)} /min`;
  $("activity").textContent = steps.activity || "–";
  const floors = today.floors_ascended !== undefined && today.floors_ascended !== null;
  $("floors-row").hidden = !floors;
  if (floors) $("floors").textContent = `↑${today.floors_ascended} ↓${today.floors_descended}`;
  $("reset-steps").textContent = steps.steps.toLocaleString();
  $("since").textContent = `since the reset, ${new Date(steps.since).toLocaleString([], { dateStyle: "medium", timeStyle: "short" })}`;
  $("reset-distance").textContent = formatDistance(steps.distance_m);
}

function setUpReset(settings) {
  const button = $("reset"), token = $("token"), note = $("reset-note");
  if (settings.read_only) {
    button.disabled = true;
    note.textContent = "read-only (stepd-web runs without --token-file)";
    return;
  }
  token.hidden = false;
  token.value = localStorage.getItem("stepd.token") || "";
  $("reset-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    note.textContent = "";
    try {
      const steps = await api("/api/reset", { method: "POST", headers: { Authorization: `Bearer ${token.value}` } });
      localStorage.setItem("stepd.token", token.value);
      showSteps(steps);
      note.textContent = "count reset";
    } catch (error) {
      note.textContent = `not reset: ${error.message}`;
    }
  });
}

// ---- the quiet status line: never a pop-up ----

const link = { connected: null, error: null };

function describeStatus(status) {
  const problems = [], fine = [];
  const source = status.source;
  const sensor = {
    waiting: "sensor: waiting for an accelerometer", busy: "sensor busy", disconnected: "sensor disconnected",
    unavailable: "sensor unavailable", starting: "sensor starting",
  }[source.state];
  if (sensor) problems.push(source.error ? `${sensor} (${source.error})` : sensor);
  else if (source.state === "finished") fine.push("replay finished");
  else fine.push(source.demo ? "demo recording" : `${source.kind} running`);
  const gps = status.gps;
  // Switched off (--no-gps) is a choice, said in grey; a gpsd that does not answer is a problem.
  if (!gps || (gps.state === "unavailable" && (gps.error || "").startsWith("GPS disabled"))) fine.push("GPS off");
  else if (gps.state === "unavailable") problems.push("GPS off: gpsd not reachable");
  else if (gps.state === "no_fix") problems.push("GPS: no fix");
  // The daemon decides when a fix is stale (GPSState's rule); the page only words it.
  else if (gps.state === "stale") problems.push(`GPS stale: last fix ${Math.round(gps.last_fix_age_s)} s ago`);
  else fine.push("GPS fix");
  if (status.store && status.store.state === "failed") problems.push(`history store failed: ${status.store.error || ""}`);
  return { problems, fine };
}

// The daemon down (stopped, restarting, not started yet): the page says it waits for it, and a chart that
// has nothing to show says so too, instead of empty boxes; what was drawn before stays until it is back.
function showWaiting(reason) {
  const line = $("status");
  line.textContent = reason === "stepd-web not reachable" ? reason : `waiting for stepd${reason ? ` (${reason})` : ""}`;
  line.classList.add("problem");
  document.body.classList.add("waiting");
  // A count never received: said in words, not as a huge dash that looks like a black bar.
  if ($("steps").textContent === "–") {
    $("steps").textContent = "waiting for stepd";
    $("steps").classList.add("placeholder");
  }
  for (const id of ["hourly", "daily"]) drawPlaceholder($(id), "waiting for stepd");
}

function showStatus(status) {
  const line = $("status");
  if (link.connected === false || !status) return showWaiting(link.error);
  document.body.classList.remove("waiting");
  const { problems, fine } = describeStatus(status);
  line.textContent = problems.concat(fine).join(" · ");
  line.classList.toggle("problem", problems.length > 0);
}

async function pollStatus() {
  try {
    const status = await api("/api/status");
    if (link.connected === null) link.connected = true;
    showStatus(status);
  } catch (error) {
    link.connected = false;
    link.error = error.message;
    showStatus(null);
  }
}

// ---- start ----

async function start() {
  const settings = await api("/api/config");
  setUpReset(settings);
  const walkMap = new WalkMap($("map"), $("map-note"), settings);
  const seismometer = new Seismometer({
    trace: $("trace"), needle: $("needle"), ticks: $("ticks"), slider: $("sensitivity"),
    fullScale: $("full-scale"), figures: $("motion-figures"),
  }, settings.motion_rate_hz);

  const refreshSteps = throttled(async () => showSteps(await api("/api/steps")), 1000);
  // Both charts from one refresh: today's bar in the 30-day chart is the sum of today's hours from the same
  // reply, so the two never disagree. The earlier days do not change; they are asked for again only when
  // the daemon's date moves on or the page reconnects.
  let days = null;
  const refreshCharts = throttled(async () => {
    const today = await api("/api/history?bin=hour");
    if (!days || days.to.slice(0, 10) !== today.to.slice(0, 10)) {
      days = await api(`/api/history?bin=day&days=${DAYS}`);
    }
    drawHourly($("hourly"), today);
    $("today-total").textContent = `· ${today.steps.toLocaleString()} steps`;
    const earlier = drawDaily($("daily"), days, DAYS, today);
    $("days-total").textContent = `· ${(earlier + today.steps).toLocaleString()} steps`;
  }, 5000);
  const refreshTrack = throttled(async () => walkMap.showTrack(await api("/api/track")), 2000);
  const refreshVisits = throttled(async () => walkMap.showVisits(await api("/api/visits")), 2000);
  const refreshPosition = throttled(async () => walkMap.showPosition(await api("/api/position")), 1000);
  const refreshAll = () => {
    days = null;
    refreshSteps(); refreshCharts(); refreshTrack(); refreshVisits(); refreshPosition();
  };

  if (SNAPSHOT) {
    refreshAll();
    return pollStatus();
  }
  const events = new EventSource("/api/events");
  events.addEventListener("link", (event) => {
    const state = JSON.parse(event.data);
    const reconnected = state.connected && link.connected !== true;
    link.connected = state.connected;
    link.error = state.error || null;
    if (reconnected) refreshAll();
    pollStatus();
  });
  events.onmessage = (event) => {
    const message = JSON.parse(event.data);
    switch (message.class) {
      case "STEP":
        showCount(Math.max(0, message.steps - stepsBeforeToday));
        $("reset-steps").textContent = message.steps.toLocaleString();
        refreshSteps(); refreshCharts();
        break;
      case "PEDOMETER": showSteps(message); break;
      case "ACTIVITY": $("activity").textContent = message.state; break;
      case "MOTION": seismometer.add(message); break;
      case "POSITION": walkMap.showPosition(message); refreshTrack(); break;
      case "VISIT": refreshVisits(); break;
    }
  };
  // The browser reconnects an EventSource by itself; meanwhile the status line says so.
  events.onerror = () => { link.connected = false; link.error = "stepd-web not reachable"; showStatus(null); };

  refreshAll();
  pollStatus();
  setInterval(pollStatus, STATUS_EVERY_MS);
}

start().catch((error) => { $("status").textContent = `cannot start: ${error.message}`; $("status").classList.add("problem"); });
