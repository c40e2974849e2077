// Drawing the galaxy with three.js: all the stars are one THREE.Points object (one draw call for
// 100,000 of them), with a ring on the selected star; colours follow the light or dark theme.
/** @import { Stars } from './stars.js' */
/** @typedef {typeof import('three')} Three */

export const FOV = 60;

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

const dark = window.matchMedia('(prefers-color-scheme: dark)');

/**
 * @param {string} name
 * @param {string} fallback
 */
function cssColor(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * starColor writes star `i`'s colour: the last six hex digits of its uuid, as the public galaxy pages
 * do, lightened towards white on a dark sky and darkened on a light one, to stay visible.
 * @param {Stars} stars
 * @param {number} i
 */
export function starColor(stars, i) {
  const hex = parseInt(stars.uuids[i].slice(-6), 16);
  const rgb = [((hex >> 16) & 255) / 255, ((hex >> 8) & 255) / 255, (hex & 255) / 255];
  for (let c = 0; c < 3; c++) stars.colors[i * 3 + c] = dark.matches ? 0.35 + 0.65 * rgb[c] : rgb[c] * 0.7;
}

/**
 * createScene sets up the renderer, the camera and the stars of `stars` on `canvas`.
 * @param {Three} THREE
 * @param {Stars} stars
 * @param {HTMLCanvasElement} canvas
 */
export function createScene(THREE, stars, canvas) {
  // Big galaxies: no multisampling (it multiplies the cost of every star drawn), and smaller stars,
  // so that a crowd stays a crowd of points rather than one blot (and costs less to fill).
  const renderer = new THREE.WebGLRenderer({ canvas, antialias: stars.count <= 20_000 });
  const crowd = Math.min(1, Math.sqrt(5000 / Math.max(1, stars.count)));
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(FOV, 1, 0.1, 1000);
  const galaxy = new THREE.Group();
  scene.add(galaxy);

  const geometry = new THREE.BufferGeometry();
  const uniforms = { scale: { value: 1 }, searching: { value: 0 } };
  const material = new THREE.ShaderMaterial({ uniforms, vertexShader: VERTEX, fragmentShader: FRAGMENT, transparent: true, depthWrite: false });
  const points = new THREE.Points(geometry, material);
  galaxy.add(points);

  // The selected star (hovered, or chosen with N/P) gets a ring.
  const markerGeometry = new THREE.BufferGeometry();
  const markerPosition = new THREE.BufferAttribute(new Float32Array(3), 3);
  const markerSize = new THREE.BufferAttribute(new Float32Array([1]), 1);
  markerGeometry.setAttribute('position', markerPosition);
  markerGeometry.setAttribute('size', markerSize);
  markerGeometry.setAttribute('highlight', new THREE.BufferAttribute(new Float32Array([1]), 1));
  markerGeometry.setAttribute('starColor', new THREE.BufferAttribute(new Float32Array(3), 3));
  const markerUniforms = { scale: uniforms.scale, searching: { value: 0 }, ring: { value: new THREE.Color() } };
  const markerMaterial = new THREE.ShaderMaterial({ uniforms: markerUniforms, vertexShader: VERTEX, fragmentShader: MARKER_FRAGMENT, transparent: true, depthTest: false });
  const marker = new THREE.Points(markerGeometry, markerMaterial);
  marker.visible = false;
  galaxy.add(marker);

  let distance = 0;
  let renderPending = false;
  /** Whether the stars' arrays changed since the last frame: they are uploaded once a frame at most. */
  let starsChanged = false;
  /** @type {() => void} */
  let afterRender = () => {};

  const view = {
    THREE,
    camera,
    galaxy,
    points,
    uniforms,
    /** The camera's distance from the centre. */
    get distance() {
      return distance;
    },
    set distance(value) {
      distance = value;
      view.render();
    },
    /** render draws the next frame (once, however often it is asked before). */
    render() {
      if (renderPending) return;
      renderPending = true;
      requestAnimationFrame(() => {
        renderPending = false;
        if (starsChanged) upload();
        camera.position.set(0, 0, distance);
        camera.lookAt(0, 0, 0);
        renderer.render(scene, camera);
        afterRender();
      });
    },
    /** @param {() => void} callback what follows every frame (the tip follows its star) */
    onRender(callback) {
      afterRender = callback;
    },
    /**
     * bind gives the GPU the stars' arrays anew: after they grew, or to upload them all. Hidden
     * stars beyond `count` are not drawn.
     */
    bind() {
      geometry.dispose();
      geometry.setAttribute('position', new THREE.BufferAttribute(stars.positions, 3));
      geometry.setAttribute('starColor', new THREE.BufferAttribute(stars.colors, 3));
      geometry.setAttribute('size', new THREE.BufferAttribute(stars.sizes, 1));
      geometry.setAttribute('highlight', new THREE.BufferAttribute(stars.highlight, 1));
      view.changed();
    },
    /** changed uploads the stars' arrays again with the next frame: after stars were added, moved or removed. */
    changed() {
      starsChanged = true;
      view.render();
    },
    /**
     * ring puts the ring on star `i`, or hides it (-1).
     * @param {number} i
     */
    ring(i) {
      marker.visible = i !== -1;
      if (i !== -1) {
        markerPosition.array.set(stars.positions.subarray(i * 3, i * 3 + 3));
        markerPosition.needsUpdate = true;
        markerSize.array[0] = Math.max(stars.sizes[i], 0.3) * 1.6;
        markerSize.needsUpdate = true;
      }
      view.render();
    },
    /** theme follows the page's colours: the sky, the ring and the stars. */
    theme() {
      renderer.setClearColor(new THREE.Color(cssColor('--bg', dark.matches ? '#13102a' : '#f6f4fb')));
      markerUniforms.ring.value.set(cssColor('--focus', dark.matches ? '#f0abfc' : '#c026d3'));
      for (let i = 0; i < stars.count; i++) starColor(stars, i);
      view.changed();
    },
    resize() {
      const width = canvas.clientWidth;
      const height = canvas.clientHeight;
      if (width === 0 || height === 0) return;
      renderer.setSize(width, height, false);
      camera.aspect = width / height;
      camera.updateProjectionMatrix();
      // A star's diameter in device pixels is size × scale / distance.
      uniforms.scale.value = 1.1 * height * renderer.getPixelRatio() * crowd;
      view.render();
    },
  };
  function upload() {
    starsChanged = false;
    for (const name of ['position', 'starColor', 'size', 'highlight']) geometry.getAttribute(name).needsUpdate = true;
    geometry.setDrawRange(0, stars.count);
    // The raycaster and the frustum test read the bounds, which three.js computes once.
    geometry.computeBoundingSphere();
  }

  dark.addEventListener('change', () => view.theme());
  new ResizeObserver(() => view.resize()).observe(canvas);
  return view;
}

/** @typedef {ReturnType<typeof createScene>} Scene */
