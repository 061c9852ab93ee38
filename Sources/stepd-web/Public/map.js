// The map seed's screen with Leaflet: the track, the position with its accuracy circle, the visits, and
// following the walk (the track and the position fitted in view) until the user moves the map (then not for
// 10 s). With no tiles (an offline board, or
// --tiles none) the same layers are drawn on a metric grid with a scale bar, never a blank square.
"use strict";

const FOLLOW_PAUSE_MS = 10000;   // the map seed: a pan stops following for 10 s after it ends
const TILE_WAIT_MS = 8000;       // no tile loaded by then: treat the tile server as unreachable

// Grid lines every 1, 2 or 5 × 10^k metres, the step chosen so that lines are at least 60 px apart.
// Drawn in Web Mercator pixels with the metres-per-pixel of one reference latitude (the place shown when
// the grid started), which is exact enough across the few kilometres a walk covers.
const MetricGrid = L.GridLayer.extend({
  initialize(referenceLat, options) {
    L.GridLayer.prototype.initialize.call(this, options);
    this.referenceLat = referenceLat;
  },
  pixelsPerMetre(zoom) {
    return 256 * Math.pow(2, zoom) / (40075016.686 * Math.cos(this.referenceLat * Math.PI / 180));
  },
  stepMetres(zoom) {
    const ppm = this.pixelsPerMetre(zoom);
    for (let exponent = -1; exponent < 8; exponent++) {
      for (const m of [1, 2, 5]) {
        const step = m * Math.pow(10, exponent);
        if (step * ppm >= 60) return step;
      }
    }
    return 1e8;
  },
  createTile(coords) {
    const tile = document.createElement("canvas");
    const size = this.getTileSize();
    tile.width = size.x; tile.height = size.y;
    const context = tile.getContext("2d");
    const stepPx = this.stepMetres(coords.z) * this.pixelsPerMetre(coords.z);
    context.strokeStyle = "#c8cdd4";
    context.lineWidth = 1;
    context.beginPath();
    const x0 = coords.x * size.x, y0 = coords.y * size.y;
    for (let x = Math.ceil(x0 / stepPx) * stepPx - x0; x < size.x; x += stepPx) {
      context.moveTo(Math.round(x) + 0.5, 0); context.lineTo(Math.round(x) + 0.5, size.y);
    }
    for (let y = Math.ceil(y0 / stepPx) * stepPx - y0; y < size.y; y += stepPx) {
      context.moveTo(0, Math.round(y) + 0.5); context.lineTo(size.x, Math.round(y) + 0.5);
    }
    context.stroke();
    return tile;
  },
});

class WalkMap {
  constructor(element, note, settings) {
    this.element = element;
    this.note = note;
    this.map = L.map(element, { zoomControl: true, attributionControl: true }).setView([0, 0], 2);
    L.control.scale({ imperial: false, maxWidth: 140 }).addTo(this.map);
    // smoothFactor 0 and noClip: every point of `track` is drawn, so what the page shows is what stepd has.
    this.track = L.polyline([], { color: "#d2361c", weight: 4, opacity: 0.85, className: "track", smoothFactor: 0, noClip: true }).addTo(this.map);
    this.accuracy = null;
    this.position = null;
    this.visits = L.layerGroup().addTo(this.map);
    this.lastUserMove = 0;
    this.offline = false;
    this.placed = false;
    // Every move of the map that this code did not make is the user's: a drag, the wheel, a pinch, a double
    // click or tap, the keyboard, a shift-drag box zoom, the zoom buttons, and whatever Leaflet adds. The
    // page's own moves are made inside ownMove(), without animation, so their movestart comes while
    // this.moving is set. The pause runs from the end of the user's move (an animated zoom ends later).
    this.moving = false;
    this.userMoving = false;
    this.map.on("movestart", () => {
      if (this.moving) return;
      this.userMoving = true;
      this.lastUserMove = Date.now();
    });
    this.map.on("moveend", () => {
      if (this.userMoving) this.lastUserMove = Date.now();
      this.userMoving = false;
    });
    if (settings.tiles) this.startTiles(settings.tiles, settings.attribution);
    else this.goOffline("no tile server configured (--tiles none)");
  }

  // Runs a move of the page's own (synchronous: no animation), which must not pause following.
  ownMove(move) {
    this.moving = true;
    try { move(); } finally { this.moving = false; }
  }

  startTiles(url, attribution) {
    let loaded = 0;
    this.tiles = L.tileLayer(url, { maxZoom: 19, attribution }).addTo(this.map);
    this.tiles.on("tileload", () => { loaded++; });
    this.tiles.on("tileerror", () => { if (loaded === 0) this.goOffline("map tiles unreachable"); });
    setTimeout(() => { if (loaded === 0) this.goOffline("no map tile arrived"); }, TILE_WAIT_MS);
  }

  goOffline(reason) {
    if (this.offline) return;
    this.offline = true;
    if (this.tiles) this.map.removeLayer(this.tiles);
    const center = this.map.getCenter();
    this.grid = new MetricGrid(center.lat, { className: "metric-grid", tileSize: 256, maxZoom: 22 }).addTo(this.map);
    this.grid.bringToBack();
    this.element.classList.add("offline");
    this.reason = reason;
    this.updateNote();
  }

  updateNote() {
    const parts = [];
    if (this.offline) parts.push(`${this.reason}: drawn on a metric grid`);
    if (this.pointCount !== undefined) parts.push(`track ${this.pointCount} points, ${formatDistance(this.distance)}`);
    if (!this.placed) parts.push("no position yet");
    this.note.textContent = parts.join(" · ");
  }

  // A TRACK reply (GeoJSON LineString, [lon, lat] pairs).
  showTrack(reply) {
    const feature = JSON.parse(reply.document);
    const coordinates = (feature.geometry && feature.geometry.coordinates) || [];
    this.track.setLatLngs(coordinates.map(([lon, lat]) => [lat, lon]));
    this.pointCount = coordinates.length;
    this.distance = reply.distance_m;
    if (!this.placed && coordinates.length > 0) {
      this.ownMove(() => this.map.fitBounds(this.track.getBounds(), { maxZoom: 17, padding: [20, 20], animate: false }));
      this.placed = true;
      if (this.grid) this.grid.referenceLat = this.map.getCenter().lat, this.grid.redraw();
    }
    this.updateNote();
  }

  // A POSITION (reply or event): the dot, its accuracy circle, and the view when following.
  showPosition(position) {
    if (position.lat === undefined || position.lat === null) return;
    const at = [position.lat, position.lon];
    const radius = position.eph_m || 0;
    if (!this.position) {
      this.accuracy = L.circle(at, { radius, color: "#2f6fdf", weight: 1, fillOpacity: 0.12, className: "accuracy" }).addTo(this.map);
      this.position = L.circleMarker(at, { radius: 7, color: "#fff", weight: 2, fillColor: "#2f6fdf", fillOpacity: 1, className: "position" }).addTo(this.map);
    } else {
      this.accuracy.setLatLng(at).setRadius(radius);
      this.position.setLatLng(at);
    }
    if (!this.placed) {
      this.ownMove(() => this.map.setView(at, 17, { animate: false }));
      this.placed = true;
      if (this.grid) this.grid.referenceLat = position.lat, this.grid.redraw();
      this.updateNote();
    } else if (!this.userMoving && Date.now() - this.lastUserMove > FOLLOW_PAUSE_MS) {
      this.ownMove(() => this.fitWalk(at));
    }
  }

  // Following: the whole walk and the position in view (as the ?static page shows it), zoomed in no closer
  // than a street; a map centred on the position alone would leave most of a 500 m walk off screen.
  fitWalk(at) {
    if (this.track.getLatLngs().length === 0) return this.map.setView(at, Math.max(this.map.getZoom(), 17), { animate: false });
    const bounds = this.track.getBounds().extend(at);
    this.map.fitBounds(bounds, { maxZoom: 17, padding: [20, 20], animate: false });
  }

  // A VISITS reply: a marker per stay.
  showVisits(reply) {
    this.visits.clearLayers();
    for (const visit of reply.visits) {
      const until = visit.departure ? `until ${localTime(visit.departure)}` : "still there";
      const minutes = visit.duration_s ? `, ${Math.round(visit.duration_s / 60)} min` : "";
      L.circleMarker([visit.lat, visit.lon], { radius: 6, color: "#6a3d9a", weight: 2, fillOpacity: 0.5, className: "visit" })
        .bindTooltip(`arrived ${localTime(visit.arrival)}, ${until}${minutes}`)
        .addTo(this.visits);
    }
  }
}

function formatDistance(metres) {
  if (metres === undefined || metres === null) return "–";
  return metres >= 1000 ? `${(metres / 1000).toFixed(2)} km` : `${Math.round(metres)} m`;
}

function localTime(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}
