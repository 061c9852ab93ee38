// Bar charts drawn as SVG from `history` replies (docs/protocol.md): today by hour, the last days by day.
// Bins carry the daemon's local offset ("2026-11-22T20:00:00.000+01:00"), so the hour and the date are read
// from the text itself: the chart follows the daemon's day even in a browser in another time zone.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgElement(name, attributes) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

// Slots of equal width, a bar in each slot that has steps, a few labels underneath.
function drawBars(svg, slots, labelEvery) {
  const width = 480, height = 140, bottom = 16, top = 6;
  const max = Math.max(1, ...slots.map((s) => s.steps));
  const slotWidth = width / slots.length;
  svg.replaceChildren();
  slots.forEach((slot, i) => {
    const x = i * slotWidth + slotWidth * 0.12, w = slotWidth * 0.76;
    svg.appendChild(svgElement("rect", { class: "slot", x, y: top, width: w, height: height - bottom - top }));
    if (slot.steps > 0) {
      const h = Math.max(1, (height - bottom - top) * slot.steps / max);
      const bar = svgElement("rect", { class: "bar" + (slot.current ? " current" : ""), x, y: height - bottom - h, width: w, height: h });
      const title = svgElement("title", {});
      title.textContent = `${slot.label}: ${slot.steps} steps`;
      bar.appendChild(title);
      bar.dataset.steps = slot.steps;
      svg.appendChild(bar);
    }
    if (i % labelEvery === 0) {
      const text = svgElement("text", { x: i * slotWidth + slotWidth / 2, y: height - 3, "text-anchor": "middle" });
      text.textContent = slot.short;
      svg.appendChild(text);
    }
  });
}

// A chart with no bars yet (the daemon not reachable since the page opened) gets a line of text instead.
function drawPlaceholder(svg, text) {
  if (svg.querySelector("rect")) return;
  const note = svgElement("text", { class: "placeholder", x: 240, y: 74, "text-anchor": "middle" });
  note.textContent = text;
  svg.replaceChildren(note);
}

// `history` with bin=hour from local midnight: 24 slots (23 or 25 on the days the clocks change are
// shown as 24; a repeated hour adds to its slot).
function drawHourly(svg, history) {
  const currentHour = Number(history.to.slice(11, 13));
  const slots = Array.from({ length: 24 }, (_, h) => ({
    steps: 0, short: String(h), label: `${String(h).padStart(2, "0")}:00`, current: h === currentHour,
  }));
  for (const bin of history.bins) slots[Number(bin.start.slice(11, 13))].steps += bin.steps;
  drawBars(svg, slots, 3);
}

// `history` with bin=day over `days` days ending today, with today's bar the sum of `todayByHour` (the
// hourly chart's reply, whose `to` says which day today is): newer than today's day bin, and the same
// number as the hourly chart. Returns the steps of the days before today.
function drawDaily(svg, history, days, todayByHour) {
  const today = todayByHour.to.slice(0, 10);
  const steps = new Map(history.bins.map((bin) => [bin.date, bin.steps]));
  steps.set(today, todayByHour.steps);
  const slots = [];
  for (let back = days - 1; back >= 0; back--) {
    const date = new Date(Date.parse(today + "T00:00:00Z") - back * 86400000).toISOString().slice(0, 10);
    slots.push({ steps: steps.get(date) || 0, short: date.slice(8, 10), label: date, current: back === 0 });
  }
  drawBars(svg, slots, 5);
  return slots.slice(0, -1).reduce((sum, slot) => sum + slot.steps, 0);
}
