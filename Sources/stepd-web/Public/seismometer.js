// The seismometer seed's screen: a needle gauge and a scrolling line graph of vertical acceleration (MOTION's
// vertical_accel, m/s², gravity removed, up positive), with its sensitivity control. As `stepctl graph`:
// the full scale is 4 m/s² by default, smaller is more sensitive.
"use strict";

const GRAPH_SECONDS = 10;
const FULL_SCALE_MAX = 20, FULL_SCALE_MIN = 0.25;   // m/s²: a stomp down to a tap on the table
const NEEDLE_DEGREES = 80;

class Seismometer {
  constructor(elements, rateHz) {
    this.elements = elements;
    this.samples = new Array(Math.round(GRAPH_SECONDS * rateHz)).fill(0);
    this.received = 0;
    const stored = Number(localStorage.getItem("stepd.fullScale"));
    this.setFullScale(stored > 0 ? stored : 4);
    elements.slider.value = String(this.sliderFor(this.fullScale));
    elements.slider.addEventListener("input", () => {
      this.setFullScale(this.fullScaleFor(Number(elements.slider.value)));
      localStorage.setItem("stepd.fullScale", String(this.fullScale));
      this.draw();
    });
    this.drawTicks();
    this.draw();
  }

  // The slider runs logarithmically from FULL_SCALE_MAX (left, least sensitive) to FULL_SCALE_MIN.
  fullScaleFor(slider) { return FULL_SCALE_MAX * Math.pow(FULL_SCALE_MIN / FULL_SCALE_MAX, slider / 100); }
  sliderFor(fullScale) { return 100 * Math.log(fullScale / FULL_SCALE_MAX) / Math.log(FULL_SCALE_MIN / FULL_SCALE_MAX); }

  setFullScale(fullScale) {
    this.fullScale = fullScale;
    this.elements.fullScale.textContent = `±${fullScale < 1 ? fullScale.toFixed(2) : fullScale.toFixed(1)} m/s²`;
  }

  drawTicks() {
    const ticks = this.elements.ticks;
    for (let i = -4; i <= 4; i++) {
      const angle = (i / 4) * NEEDLE_DEGREES * Math.PI / 180;
      const x1 = 100 + 78 * Math.sin(angle), y1 = 100 - 78 * Math.cos(angle);
      const x2 = 100 + 90 * Math.sin(angle), y2 = 100 - 90 * Math.cos(angle);
      ticks.appendChild(svgElement("line", { class: "tick", x1, y1, x2, y2 }));
    }
  }

  add(motion) {
    const value = Number.isFinite(motion.vertical_accel) ? motion.vertical_accel : 0;
    this.samples.push(value);
    this.samples.shift();
    this.received++;
    this.last = motion;
    this.draw();
  }

  draw() {
    const scaled = (v) => Math.max(-1, Math.min(1, v / this.fullScale));
    const n = this.samples.length;
    const points = this.samples.map((v, i) => `${(i * 480 / (n - 1)).toFixed(1)},${(80 - scaled(v) * 76).toFixed(1)}`);
    this.elements.trace.setAttribute("points", points.join(" "));
    const latest = this.samples[n - 1];
    this.elements.needle.setAttribute("transform", `rotate(${(scaled(latest) * NEEDLE_DEGREES).toFixed(1)} 100 100)`);
    if (this.last) {
      const m = this.last;
      this.elements.figures.textContent =
        `vertical ${latest.toFixed(2)} m/s² · vibration ${m.vibration_rms.toFixed(3)} m/s² rms · pitch ${m.pitch_deg.toFixed(0)}° · roll ${m.roll_deg.toFixed(0)}°`;
    }
  }
}
