// The galaxy page: every entry as a star of GET /api/v1/nonsense/galaxy, drawn with three.js (its
// module build, served by the service; loaded with import(), as the page's policy allows scripts from
// the service only). All the stars are one THREE.Points object, so 100,000 of them are one draw call.
// Drag or arrow keys turn the galaxy, the wheel or +/- zoom, hovering (or N/P) shows a star's text,
// a click (or Enter) opens its share page, and a search highlights the matching stars.
// Entry texts are untrusted: they only ever reach the page as text (textContent).
'use strict';

(function () {
  const view = document.getElementById('galaxy-view');
  if (!view) return;
  const canvas = document.getElementById('galaxy-canvas');
  const tip = document.getElementById('galaxy-tip');
  const status = document.getElementById('galaxy-status');
  const matchesLine = document.getElementById('galaxy-matches');
  const form = document.querySelector('.galaxy-search');
  const input = document.getElementById('galaxy-q');
  const clientWords = JSON.parse(document.body.dataset.clientWords || '{}');
  const CLIENT_TOKEN = /\$AUTHOR\$|\$SERVER\$|\$CHANNEL\$|\$\{app_name\}/g;

  const START = { distance: 24, turnX: 0.35, turnY: 0 };
  const MIN_DISTANCE = 3;
  const MAX_DISTANCE = 120;
  const FOV = 60;

  /** setState shows where the page is (loading, waiting, ready, no-webgl, error) and a message, or none. */
  function setState(state, ...message) {
    view.dataset.state = state;
    status.replaceChildren(...message);
    status.hidden = message.length === 0;
  }

  function link(href, text) {
    const a = document.createElement('a');
    a.href = href;
    a.textContent = text;
    return a;
  }

  function webglAvailable() {
    try {
      const probe = document.createElement('canvas');
      return Boolean(probe.getContext('webgl2') || probe.getContext('webgl'));
    } catch {
      return false;
    }
  }

  const { problemDetail } = window.nonsenseSite;

  if (!webglAvailable()) {
    canvas.hidden = true;
    setState(
      'no-webgl',
      'This browser cannot draw WebGL, so the galaxy cannot be shown here. The galaxy is a 3D map of the entries in which similar entries are close together. You can ',
      link('/search', 'search the entries'),
      ' instead, or download the star map as ',
      link('/api/v1/nonsense/galaxy', 'CSV'),
      '.',
    );
    form.hidden = true;
    return;
  }

  // ---- The stars ----

  /** loadStars fetches the galaxy as CSV (the smaller form), waiting while the first layout is computed. */
  async function loadStars() {
    for (;;) {
      const response = await fetch('/api/v1/nonsense/galaxy', { headers: { accept: 'text/csv' } });
      if (response.status === 503) {
        const wait = Math.min(60, Number(response.headers.get('retry-after')) || 10);
        setState('waiting', `The galaxy is still being laid out; trying again in ${wait} s.`);
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
        continue;
      }
      if (!response.ok) throw new Error(await problemDetail(response));
      return parseStars(await response.text());
    }
  }

  /**
   * parseStars reads the CSV: a header, then uuid,x,y,z,point_size per line (no field is ever quoted).
   * The body has no line break after its last record; empty lines are skipped all the same, so that
   * none can ever become a star at NaN.
   */
  function parseStars(text) {
    const lines = text.split('\r\n').slice(1).filter((line) => line !== '');
    const count = lines.length;
    const uuids = new Array(count);
    const positions = new Float32Array(count * 3);
    const sizes = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const fields = lines[i].split(',');
      uuids[i] = fields[0];
      positions[i * 3] = parseFloat(fields[1]);
      positions[i * 3 + 1] = parseFloat(fields[2]);
      positions[i * 3 + 2] = parseFloat(fields[3]);
      sizes[i] = parseFloat(fields[4]);
    }
    return { uuids, positions, sizes, count };
  }

  // ---- Colours: the last six hex digits of the uuid, as the public galaxy pages do, fitted to the theme ----

  const dark = window.matchMedia('(prefers-color-scheme: dark)');

  function cssColor(name, fallback) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  }

  function starColors(uuids, out) {
    const isDark = dark.matches;
    for (let i = 0; i < uuids.length; i++) {
      const hex = parseInt(uuids[i].slice(-6), 16);
      let r = ((hex >> 16) & 255) / 255;
      let g = ((hex >> 8) & 255) / 255;
      let b = (hex & 255) / 255;
      // On a dark sky the stars are lightened towards white; on a light one darkened, to stay visible.
      if (isDark) {
        r = 0.35 + 0.65 * r;
        g = 0.35 + 0.65 * g;
        b = 0.35 + 0.65 * b;
      } else {
        r *= 0.7;
        g *= 0.7;
        b *= 0.7;
      }
      out[i * 3] = r;
      out[i * 3 + 1] = g;
      out[i * 3 + 2] = b;
    }
    return out;
  }

  // ---- Texts, read on demand from the entry API ----

  const texts = new Map();
  async function entryText(uuid) {
    if (texts.has(uuid)) return texts.get(uuid);
    const response = await fetch(`/api/v1/nonsense/${uuid}`, { headers: { accept: 'application/json' } });
    const text = response.ok ? (await response.json()).nonsense.replace(CLIENT_TOKEN, (token) => clientWords[token] || token) : 'This entry is no longer available.';
    texts.set(uuid, text);
    return text;
  }

  // ---- Drawing ----

  const VERTEX = `
    attribute float size;
    attribute float highlight;
    attribute vec3 starColor;
    uniform float scale;
    uniform float searching;
    varying vec3 vColor;
    varying float vAlpha;
    void main() {
      vec4 place = modelViewMatrix * vec4(position, 1.0);
      float lit = searching > 0.5 ? (highlight > 0.5 ? 1.7 : 0.7) : 1.0;
      gl_PointSize = max(2.0, size * scale * lit / -place.z);
      vColor = starColor;
      vAlpha = searching > 0.5 && highlight < 0.5 ? 0.12 : clamp(size / 0.6 + 0.2, 0.0, 1.0);
      gl_Position = projectionMatrix * place;
    }`;
  const FRAGMENT = `
    varying vec3 vColor;
    varying float vAlpha;
    void main() {
      float d = length(gl_PointCoord - vec2(0.5));
      if (d > 0.5) discard;
      gl_FragColor = vec4(vColor, vAlpha * smoothstep(0.5, 0.25, d));
    }`;
  const MARKER_FRAGMENT = `
    uniform vec3 ring;
    void main() {
      float d = length(gl_PointCoord - vec2(0.5));
      if (d > 0.5 || d < 0.36) discard;
      gl_FragColor = vec4(ring, 1.0);
    }`;

  async function start() {
    setState('loading', 'Loading the galaxy…');
    const [THREE, stars] = await Promise.all([import(document.body.dataset.three), loadStars()]);
    if (stars.count === 0) {
      setState('ready', 'The galaxy is empty: there are no entries yet.');
      view.dataset.stars = '0';
      return;
    }
    const index = new Map(stars.uuids.map((uuid, i) => [uuid, i]));
    // What the page shows: the selected star (-1: none), and the stars a search matched.
    let selected = -1;
    let tipFor = -1;
    let searching = false;
    let matchList = [];

    // Big galaxies: no multisampling (it multiplies the cost of every star drawn), and smaller stars,
    // so that a crowd stays a crowd of points rather than one blot (and costs less to fill).
    const renderer = new THREE.WebGLRenderer({ canvas, antialias: stars.count <= 20_000 });
    const crowd = Math.min(1, Math.sqrt(5000 / stars.count));
    renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    const scene = new THREE.Scene();
    const camera = new THREE.PerspectiveCamera(FOV, 1, 0.1, 1000);
    const galaxy = new THREE.Group();
    scene.add(galaxy);

    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute('position', new THREE.BufferAttribute(stars.positions, 3));
    const colorAttribute = new THREE.BufferAttribute(starColors(stars.uuids, new Float32Array(stars.count * 3)), 3);
    geometry.setAttribute('starColor', colorAttribute);
    geometry.setAttribute('size', new THREE.BufferAttribute(stars.sizes, 1));
    const highlight = new Float32Array(stars.count);
    const highlightAttribute = new THREE.BufferAttribute(highlight, 1);
    geometry.setAttribute('highlight', highlightAttribute);
    const uniforms = { scale: { value: 1 }, searching: { value: 0 } };
    const material = new THREE.ShaderMaterial({ uniforms, vertexShader: VERTEX, fragmentShader: FRAGMENT, transparent: true, depthWrite: false });
    const points = new THREE.Points(geometry, material);
    galaxy.add(points);

    // The selected star (hovered, or chosen with N/P) gets a ring.
    const markerGeometry = new THREE.BufferGeometry();
    markerGeometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(3), 3));
    markerGeometry.setAttribute('size', new THREE.BufferAttribute(new Float32Array([1]), 1));
    markerGeometry.setAttribute('highlight', new THREE.BufferAttribute(new Float32Array([1]), 1));
    markerGeometry.setAttribute('starColor', new THREE.BufferAttribute(new Float32Array(3), 3));
    const markerUniforms = { scale: uniforms.scale, searching: { value: 0 }, ring: { value: new THREE.Color() } };
    const marker = new THREE.Points(markerGeometry, new THREE.ShaderMaterial({ uniforms: markerUniforms, vertexShader: VERTEX, fragmentShader: MARKER_FRAGMENT, transparent: true, depthTest: false }));
    marker.visible = false;
    galaxy.add(marker);

    function applyTheme() {
      renderer.setClearColor(new THREE.Color(cssColor('--bg', dark.matches ? '#13102a' : '#f6f4fb')));
      markerUniforms.ring.value.set(cssColor('--focus', dark.matches ? '#f0abfc' : '#c026d3'));
      starColors(stars.uuids, colorAttribute.array);
      colorAttribute.needsUpdate = true;
      requestRender();
    }
    dark.addEventListener('change', applyTheme);

    let distance = START.distance;
    function placeCamera() {
      camera.position.set(0, 0, distance);
      camera.lookAt(0, 0, 0);
    }

    let renderPending = false;
    function requestRender() {
      if (renderPending) return;
      renderPending = true;
      requestAnimationFrame(() => {
        renderPending = false;
        placeCamera();
        renderer.render(scene, camera);
        if (selected !== -1) positionTip(selected);
      });
    }

    function resize() {
      const width = canvas.clientWidth;
      const height = canvas.clientHeight;
      if (width === 0 || height === 0) return;
      renderer.setSize(width, height, false);
      camera.aspect = width / height;
      camera.updateProjectionMatrix();
      // A star's diameter in device pixels is size × scale / distance.
      uniforms.scale.value = 1.1 * height * renderer.getPixelRatio() * crowd;
      requestRender();
    }
    new ResizeObserver(resize).observe(canvas);

    // ---- Selection, the text tip and opening a star ----

    const screen = new THREE.Vector3();

    function screenPosition(i) {
      screen.fromArray(stars.positions, i * 3).applyMatrix4(galaxy.matrixWorld).project(camera);
      return { x: ((screen.x + 1) / 2) * canvas.clientWidth, y: ((1 - screen.y) / 2) * canvas.clientHeight, visible: screen.z < 1 };
    }

    function positionTip(i) {
      const { x, y, visible } = screenPosition(i);
      tip.dataset.x = x.toFixed(1);
      tip.dataset.y = y.toFixed(1);
      tip.style.left = `${Math.min(Math.max(x + 14, 0), Math.max(canvas.clientWidth - tip.offsetWidth, 0))}px`;
      tip.style.top = `${y + 14 + tip.offsetHeight > canvas.clientHeight ? Math.max(y - 14 - tip.offsetHeight, 0) : y + 14}px`;
      tip.hidden = !visible;
    }

    async function select(i, how) {
      if (i === selected) return;
      selected = i;
      if (i === -1) {
        marker.visible = false;
        tip.hidden = true;
        tipFor = -1;
        canvas.style.cursor = '';
        requestRender();
        return;
      }
      markerGeometry.attributes.position.array.set(stars.positions.subarray(i * 3, i * 3 + 3));
      markerGeometry.attributes.position.needsUpdate = true;
      markerGeometry.attributes.size.array[0] = Math.max(stars.sizes[i], 0.3) * 1.6;
      markerGeometry.attributes.size.needsUpdate = true;
      marker.visible = true;
      canvas.style.cursor = how === 'pointer' ? 'pointer' : '';
      tipFor = i;
      tip.dataset.uuid = stars.uuids[i];
      tip.textContent = '…';
      tip.hidden = false;
      positionTip(i);
      requestRender();
      const text = await entryText(stars.uuids[i]);
      if (tipFor !== i) return;
      tip.replaceChildren(document.createTextNode(text));
      const hint = document.createElement('span');
      hint.className = 'galaxy-tip-hint';
      hint.textContent = how === 'pointer' ? 'Click to open' : 'Enter to open';
      tip.append(hint);
      positionTip(i);
    }

    function open(i) {
      if (i !== -1) window.location.assign(`/nonsense/${stars.uuids[i]}`);
    }

    // ---- Pointer: drag turns, wheel zooms, hover reads, click opens ----

    const raycaster = new THREE.Raycaster();
    const pointer = new THREE.Vector2();
    let drag = null;
    let hoverQueued = null;

    function pick(clientX, clientY) {
      const box = canvas.getBoundingClientRect();
      pointer.set(((clientX - box.left) / box.width) * 2 - 1, -((clientY - box.top) / box.height) * 2 + 1);
      raycaster.setFromCamera(pointer, camera);
      // About 8 CSS pixels around the pointer, at the distance of the galaxy's centre.
      raycaster.params.Points.threshold = (8 / box.height) * 2 * distance * Math.tan(((FOV / 2) * Math.PI) / 180);
      let best = -1;
      let bestRay = Infinity;
      for (const hit of raycaster.intersectObject(points)) {
        if (searching && highlight[hit.index] === 0) continue;
        if (hit.distanceToRay < bestRay) {
          bestRay = hit.distanceToRay;
          best = hit.index;
        }
      }
      return best;
    }

    canvas.addEventListener('pointerdown', (event) => {
      drag = { x: event.clientX, y: event.clientY, moved: false };
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener('pointermove', (event) => {
      if (drag !== null) {
        const dx = event.clientX - drag.x;
        const dy = event.clientY - drag.y;
        if (!drag.moved && Math.hypot(dx, dy) < 4) return;
        drag.moved = true;
        drag.x = event.clientX;
        drag.y = event.clientY;
        turn(dx * 0.006, dy * 0.006);
        return;
      }
      // One pick per frame at most: it looks at every star.
      if (hoverQueued === null) {
        requestAnimationFrame(() => {
          const { clientX, clientY } = hoverQueued;
          hoverQueued = null;
          const found = pick(clientX, clientY);
          if (found !== -1 || tipFor !== -1) void select(found, 'pointer');
        });
      }
      hoverQueued = { clientX: event.clientX, clientY: event.clientY };
    });
    canvas.addEventListener('pointerup', (event) => {
      const clicked = drag !== null && !drag.moved;
      drag = null;
      if (!clicked) return;
      const found = pick(event.clientX, event.clientY);
      if (found !== -1) open(found);
    });
    canvas.addEventListener('pointerleave', () => {
      if (drag === null && tipFor !== -1) void select(-1);
    });
    canvas.addEventListener(
      'wheel',
      (event) => {
        event.preventDefault();
        zoom(Math.exp(event.deltaY * 0.0015));
      },
      { passive: false },
    );

    function turn(aroundY, aroundX) {
      galaxy.rotation.y += aroundY;
      galaxy.rotation.x = Math.max(-Math.PI / 2, Math.min(Math.PI / 2, galaxy.rotation.x + aroundX));
      galaxy.updateMatrixWorld();
      requestRender();
    }

    function zoom(factor) {
      distance = Math.max(MIN_DISTANCE, Math.min(MAX_DISTANCE, distance * factor));
      requestRender();
    }

    function reset() {
      distance = START.distance;
      galaxy.rotation.set(START.turnX, START.turnY, 0);
      galaxy.updateMatrixWorld();
      requestRender();
    }

    // ---- Keys, on the focused canvas ----

    function step(direction) {
      const list = searching ? matchList : null;
      const length = list ? list.length : stars.count;
      if (length === 0) return;
      const at = list ? list.indexOf(selected) : selected;
      const next = at === -1 ? (direction > 0 ? 0 : length - 1) : (at + direction + length) % length;
      void select(list ? list[next] : next, 'keys');
    }

    canvas.addEventListener('keydown', (event) => {
      const keys = {
        ArrowLeft: () => turn(-0.1, 0),
        ArrowRight: () => turn(0.1, 0),
        ArrowUp: () => turn(0, -0.1),
        ArrowDown: () => turn(0, 0.1),
        '+': () => zoom(1 / 1.2),
        '=': () => zoom(1 / 1.2),
        '-': () => zoom(1.2),
        0: reset,
        n: () => step(1),
        N: () => step(1),
        p: () => step(-1),
        P: () => step(-1),
        Enter: () => open(selected),
        Escape: () => void select(-1),
      };
      const action = keys[event.key];
      if (action === undefined || event.ctrlKey || event.metaKey || event.altKey) return;
      event.preventDefault();
      action();
    });

    // ---- Search: highlight the entries whose text contains the term (the export's `q`) ----

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const q = input.value.trim();
      highlight.fill(0);
      matchList = [];
      searching = q !== '';
      if (searching) {
        matchesLine.textContent = 'Searching…';
        const response = await fetch(`/api/v1/nonsense?format=json&q=${encodeURIComponent(q)}`, { headers: { accept: 'application/json' } });
        if (!response.ok) {
          searching = false;
          matchesLine.textContent = await problemDetail(response);
        } else {
          for (const entry of await response.json()) {
            const i = index.get(entry.uuid);
            if (i === undefined) continue;
            highlight[i] = 1;
            matchList.push(i);
          }
          matchesLine.textContent =
            matchList.length === 0
              ? `No star matches “${q}”.`
              : `${matchList.length} of ${stars.count} stars match “${q}”: they are brighter now. Focus the map and press N for the first.`;
        }
      } else {
        matchesLine.textContent = '';
      }
      uniforms.searching.value = searching ? 1 : 0;
      highlightAttribute.needsUpdate = true;
      view.dataset.matches = String(matchList.length);
      if (selected !== -1 && searching && highlight[selected] === 0) void select(-1);
      requestRender();
    });

    reset();
    applyTheme();
    resize();
    view.dataset.stars = String(stars.count);
    setState('ready');
  }

  start().catch((error) => {
    setState('error', `The galaxy could not be shown: ${error.message}`);
  });
})();
